// Results recorded before $before: the sweep's expired ones, or the oldest beyond the bound.
MATCH (r:Request) WHERE r.at < $before DELETE r RETURN count(*) AS n
