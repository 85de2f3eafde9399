// Change records: what each write scope changed, under a sequence number kept in the store, so each of
// several daemons on one store brings its in-memory indexes up to date (keymem/store/changes.py).
// Written only where several daemons write one store (FalkorDB); on LadybugDB one daemon owns the
// file and the tables stay empty.
// seq: the record's number (ChangeHead.n after the write); writer: the writing process's random id;
// memories/links/keys/aliases: the ids whose rows, link weights, key rows or aliases changed;
// everything: the whole store changed (an import, the console's writes): reload everything.
CREATE NODE TABLE IF NOT EXISTS ChangeHead(id STRING PRIMARY KEY, n INT64);
CREATE NODE TABLE IF NOT EXISTS Change(seq INT64 PRIMARY KEY, writer STRING, at DOUBLE, memories STRING[], links STRING[], keys STRING[], aliases STRING[], everything BOOLEAN);
