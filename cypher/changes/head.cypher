// The newest change record's sequence number (none before the first record).
MATCH (h:ChangeHead) WHERE h.id = 'head' RETURN h.n AS n
