MATCH (a:Alias) WHERE a.key_id = $key_id AND a.learned RETURN count(a) AS n
