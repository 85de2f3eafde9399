MATCH (n:KeyName) WHERE n.id = $id DELETE n
