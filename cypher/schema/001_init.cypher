// The key/memory graph. Times are POSIX seconds (DOUBLE); ids are strings.
CREATE NODE TABLE Meta(name STRING PRIMARY KEY, value STRING);
CREATE NODE TABLE Key(
    id STRING PRIMARY KEY,
    namespace STRING,
    text STRING,
    norm STRING,
    key_type STRING,
    created_at DOUBLE,
    last_hit_at DOUBLE
);
CREATE NODE TABLE Alias(
    id STRING PRIMARY KEY,
    key_id STRING,
    namespace STRING,
    text STRING,
    norm STRING,
    learned BOOLEAN,
    hits INT64,
    created_at DOUBLE,
    last_hit_at DOUBLE
);
CREATE NODE TABLE Memory(
    id STRING PRIMARY KEY,
    namespace STRING,
    content STRING,
    norm STRING,
    active BOOLEAN,
    created_at DOUBLE,
    updated_at DOUBLE,
    last_confirmed_at DOUBLE,
    last_access_at DOUBLE,
    access_count INT64,
    confirmation_count INT64,
    depth DOUBLE,
    decay_profile STRING,
    ttl_seconds DOUBLE,
    expires_at DOUBLE,
    supersedes STRING,
    superseded_by STRING,
    source STRING,
    evidence STRING
);
CREATE NODE TABLE PendingAlias(
    id STRING PRIMARY KEY,
    key_id STRING,
    query STRING,
    count INT64,
    last_at DOUBLE
);
CREATE REL TABLE LINKS(FROM Key TO Memory, weight DOUBLE, created_at DOUBLE);
CREATE REL TABLE RELATED_TO(FROM Memory TO Memory, weight DOUBLE, created_at DOUBLE);
CREATE REL TABLE SUPERSEDES(FROM Memory TO Memory, at DOUBLE);
CREATE REL TABLE ALIAS_OF(FROM Alias TO Key);
// Unique lookups by primary key (Kuzu's only index): "<namespace>\x1f<normalised text>".
CREATE NODE TABLE KeyName(id STRING PRIMARY KEY, key_id STRING);
CREATE NODE TABLE MemoryNorm(id STRING PRIMARY KEY, memory_id STRING);
