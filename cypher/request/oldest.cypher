MATCH (r:Request) RETURN min(r.at) AS at
