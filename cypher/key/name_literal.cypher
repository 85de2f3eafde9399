// The literal form of a key ("dr smith" for "Dr. Smith"), as queries' word n-grams spell it.
// The first key to claim a form keeps it.
MERGE (n:KeyName {id: $id})
ON CREATE SET n.key_id = $key_id
