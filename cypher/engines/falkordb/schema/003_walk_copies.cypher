// FalkorDB: the association walk's copies (see cypher/schema/003_walk_copies.cypher) need no columns;
// the defaults LadybugDB's ALTER TABLE gives are set here on the rows that exist, and the create
// statements set them on new ones. The links' copies are filled after the step (store/walk.py).
MATCH (k:Key) WHERE k.lasting_links IS NULL SET k.lasting_links = 0;
MATCH (m:Memory) WHERE m.has_related IS NULL SET m.has_related = false;
MERGE (m:Meta {name: 'walk_copies'}) SET m.value = 'pending'
