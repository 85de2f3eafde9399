// keymem: heavy (a whole-table read: it runs alone, see Store._read)
MATCH (k:Key) WHERE k.key_type = 'concept' RETURN k.id AS id, k.namespace AS namespace, k.text AS text
