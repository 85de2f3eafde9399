// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// KeyVec rows (the sentinel counted apart).
MATCH (v:KeyVec) RETURN sum(CASE WHEN v.id = $sentinel THEN 1 ELSE 0 END) AS sentinel, sum(CASE WHEN v.id = $sentinel THEN 0 ELSE 1 END) AS n
