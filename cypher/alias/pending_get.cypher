// The count a (key, query) pair has so far, read before alias/pending_bump adds one (autokey.on_read).
MATCH (p:PendingAlias) WHERE p.id = $id RETURN p.count AS count
