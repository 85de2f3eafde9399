CALL SHOW_INDEXES() RETURN table_name, index_name
