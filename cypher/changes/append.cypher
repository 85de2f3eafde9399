// The change record of one write scope, written in the scope after its body (Tx.before_commit): the
// head's sequence goes up by one and the record takes it. Nothing reads its result.
MERGE (h:ChangeHead {id: 'head'})
ON CREATE SET h.n = 1
ON MATCH SET h.n = h.n + 1
WITH h
CREATE (:Change {seq: h.n, writer: $writer, at: $at, memories: $memories, links: $links, keys: $keys,
                 aliases: $aliases, everything: $everything})
