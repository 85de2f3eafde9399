// Inside the write transaction of the call it answers: committed with the write or not at all.
CREATE (:Request {id: $id, digest: $digest, result: $result, at: $at})
