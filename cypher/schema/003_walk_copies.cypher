// The association walk reads its neighbourhood hop by hop in Cypher (cypher/neighbourhood/). Kuzu
// 0.11.3 plans a match over a set of nodes as a scan of the node table; each hop is therefore a
// scan of internal ids filtered by offset and one extend, which stays cheap only if it reads
// nothing but the rel and the scanned table's own columns. So:
// * each LINKS edge carries a copy of what the walk filters on of its memory, the active flag and
//   the expiry (m_active, m_expires_at), kept in step by every write that creates a link or
//   deactivates a memory (link/create, memory/link_keys, io/link_merge, link/memory_inactive);
// * each Key counts its lasting links (to active memories without a TTL): a floor under its
//   visible memories at any time, so a key above the walk's fan-out is skipped without reading its
//   links; kept by the same writes and by link/memory_released before a memory is deleted;
// * each Memory says whether it ever had a RELATED_TO edge (has_related, set by memory/relate and
//   io/related_merge, never cleared), so a hop asks for RELATED_TO only when one may exist.
// `keymem check` compares all three with what they summarise. Copies of the key and memory ids on
// LINKS made every checkpoint at 100k memories ~1 s slower (Kuzu rewrites the rel table's string
// columns); stores that ran the first version of this step (003_link_copies) have them dropped.
ALTER TABLE LINKS DROP IF EXISTS k_id;
ALTER TABLE LINKS DROP IF EXISTS m_id;
ALTER TABLE LINKS ADD IF NOT EXISTS m_active BOOLEAN;
ALTER TABLE LINKS ADD IF NOT EXISTS m_expires_at DOUBLE;
ALTER TABLE Key ADD IF NOT EXISTS lasting_links INT64 DEFAULT 0;
ALTER TABLE Memory ADD IF NOT EXISTS has_related BOOLEAN DEFAULT false;
// The existing rows are filled in pages after this step (store/walk.py, fill_walk_copies: one
// transaction over 430k links does not fit a 256 MiB buffer pool); until then the walk cannot run.
MERGE (m:Meta {name: 'walk_copies'}) SET m.value = 'pending';
