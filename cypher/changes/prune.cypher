// Drop the change records up to $below (a daemon further behind than what is kept reloads everything).
MATCH (c:Change) WHERE c.seq <= $below DELETE c RETURN count(*) AS n
