MATCH (m:Memory) WHERE m.supersedes = $id SET m.supersedes = NULL
