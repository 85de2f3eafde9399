// The remembered result of one request id, if any.
MATCH (r:Request) WHERE r.id = $id RETURN r.digest AS digest, r.result AS result, r.at AS at
