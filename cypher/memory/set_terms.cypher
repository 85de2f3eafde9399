// Store BM25 terms for memories written before terms were kept (or after a tokenizer change).
UNWIND $rows AS r
MATCH (m:Memory {id: r.id})
SET m.terms = r.terms
