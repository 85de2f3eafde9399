// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// The time of the newest result beyond the $keep newest: everything up to it goes.
MATCH (r:Request) RETURN r.at AS at ORDER BY r.at DESC SKIP $keep LIMIT 1
