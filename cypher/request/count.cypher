MATCH (r:Request) RETURN count(r) AS n
