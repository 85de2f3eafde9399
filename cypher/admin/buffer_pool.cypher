CALL BM_INFO() RETURN mem_usage AS used, mem_limit AS capacity
