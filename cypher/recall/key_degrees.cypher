// Links per key (fan-out), counted on the adjacency alone: superseded or expired memories are
// included, which is close enough for hub detection and key IDF and avoids reading every
// memory of a hub (a filtered count on a 5k-memory hub costs tens of ms).
MATCH (k:Key)-[l:LINKS]->() WHERE k.id IN $ids RETURN k.id AS id, count(l) AS n
