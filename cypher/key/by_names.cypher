// Keys by many KeyName ids. Kuzu plans this UNWIND as a scan (~16 ms at 100k keys): for a
// handful of names callers use key/by_name once each (~0.3 ms), see keys.keys_by_names.
UNWIND $ids AS i MATCH (n:KeyName) WHERE n.id = i MATCH (k:Key) WHERE k.id = n.key_id RETURN i AS name_id, k
