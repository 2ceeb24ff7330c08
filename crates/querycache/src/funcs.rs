//! Word lists for the cacheability rules: non-deterministic functions (never cached),
//! deterministic builtins and keywords that may precede `(` (cacheable), and words that
//! make a read uncacheable on their own.

/// Functions whose result depends on time, session, randomness or server state.
#[rustfmt::skip]
const NON_DETERMINISTIC: &[&str] = &[
    "NOW", "SYSDATE", "CURDATE", "CURTIME", "CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP", "LOCALTIME",
    "LOCALTIMESTAMP", "UTC_DATE", "UTC_TIME", "UTC_TIMESTAMP", "UNIX_TIMESTAMP", "RAND", "UUID", "UUID_SHORT",
    "SYS_GUID", "CONNECTION_ID", "LAST_INSERT_ID", "FOUND_ROWS", "ROW_COUNT", "USER", "CURRENT_USER", "SESSION_USER",
    "SYSTEM_USER", "CURRENT_ROLE", "DATABASE", "SCHEMA", "BENCHMARK", "SLEEP", "GET_LOCK", "RELEASE_LOCK",
    "RELEASE_ALL_LOCKS", "IS_FREE_LOCK", "IS_USED_LOCK", "MASTER_POS_WAIT", "MASTER_GTID_WAIT", "SOURCE_POS_WAIT",
    "LOAD_FILE", "RANDOM_BYTES", "NEXTVAL", "LASTVAL", "SETVAL", "VERSION", "LAST_VALUE_ID", "ENCRYPT", "PASSWORD",
    "OLD_PASSWORD", "BINLOG_GTID_POS", "COLUMN_GET", "WSREP_LAST_SEEN_GTID", "WSREP_LAST_WRITTEN_GTID",
    "WSREP_SYNC_WAIT_UPTO_GTID", "ROWNUM",
];

/// Words that are non-deterministic without parentheses too.
#[rustfmt::skip]
const BARE_DENY: &[&str] = &[
    "CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP", "LOCALTIME", "LOCALTIMESTAMP", "UTC_DATE", "UTC_TIME",
    "UTC_TIMESTAMP", "CURRENT_USER", "CURRENT_ROLE", "SQL_CALC_FOUND_ROWS", "ROWNUM",
];

/// Deterministic builtin functions (their result depends only on their arguments and on
/// session variables that are part of the cache key).
#[rustfmt::skip]
const DETERMINISTIC: &[&str] = &[
    // aggregates and window functions
    "COUNT", "SUM", "AVG", "MIN", "MAX", "GROUP_CONCAT", "BIT_AND", "BIT_OR", "BIT_XOR", "STD", "STDDEV",
    "STDDEV_POP", "STDDEV_SAMP", "VARIANCE", "VAR_POP", "VAR_SAMP", "JSON_ARRAYAGG", "JSON_OBJECTAGG", "ROW_NUMBER",
    "RANK", "DENSE_RANK", "NTILE", "LAG", "LEAD", "FIRST_VALUE", "LAST_VALUE", "NTH_VALUE", "PERCENT_RANK",
    "CUME_DIST", "MEDIAN", "PERCENTILE_CONT", "PERCENTILE_DISC",
    // control flow and comparison
    "IF", "IFNULL", "NULLIF", "NVL", "NVL2", "ISNULL", "COALESCE", "GREATEST", "LEAST", "INTERVAL", "STRCMP",
    // strings
    "ASCII", "BIN", "BIT_LENGTH", "CHAR", "CHAR_LENGTH", "CHARACTER_LENGTH", "CHR", "CONCAT", "CONCAT_WS", "ELT",
    "EXPORT_SET", "FIELD", "FIND_IN_SET", "FORMAT", "FROM_BASE64", "HEX", "INSERT", "INSTR", "LCASE", "LEFT",
    "LENGTH", "LENGTHB", "LOCATE", "LOWER", "LPAD", "LTRIM", "MAKE_SET", "MID", "OCT", "OCTET_LENGTH", "ORD",
    "POSITION", "QUOTE", "REPEAT", "REPLACE", "REVERSE", "RIGHT", "RPAD", "RTRIM", "SOUNDEX", "SPACE", "SUBSTR",
    "SUBSTRING", "SUBSTRING_INDEX", "TO_BASE64", "TRIM", "UCASE", "UNHEX", "UPPER", "WEIGHT_STRING",
    "NATURAL_SORT_KEY", "SFORMAT", "REGEXP_REPLACE", "REGEXP_INSTR", "REGEXP_SUBSTR", "REGEXP_LIKE", "CAST",
    "CONVERT", "CHARSET", "COLLATION", "COERCIBILITY", "TO_CHAR", "DECODE_HISTOGRAM", "CRC32", "CRC32C", "MD5", "SHA",
    "SHA1", "SHA2", "AES_ENCRYPT", "AES_DECRYPT", "COMPRESS", "UNCOMPRESS", "UNCOMPRESSED_LENGTH", "INET_ATON",
    "INET_NTOA", "INET6_ATON", "INET6_NTOA", "IS_IPV4", "IS_IPV6", "IS_IPV4_COMPAT", "IS_IPV4_MAPPED", "BIT_COUNT",
    "MATCH", "AGAINST",
    // numbers
    "ABS", "ACOS", "ASIN", "ATAN", "ATAN2", "CEIL", "CEILING", "CONV", "COS", "COT", "DEGREES", "DIV", "EXP", "FLOOR",
    "LN", "LOG", "LOG10", "LOG2", "MOD", "PI", "POW", "POWER", "RADIANS", "ROUND", "SIGN", "SIN", "SQRT", "TAN",
    "TRUNCATE",
    // dates (deterministic given their arguments and the session time zone)
    "ADDDATE", "ADDTIME", "CONVERT_TZ", "DATE", "DATEDIFF", "DATE_ADD", "DATE_FORMAT", "DATE_SUB", "DAY", "DAYNAME",
    "DAYOFMONTH", "DAYOFWEEK", "DAYOFYEAR", "EXTRACT", "FROM_DAYS", "FROM_UNIXTIME", "GET_FORMAT", "HOUR", "LAST_DAY",
    "MAKEDATE", "MAKETIME", "MICROSECOND", "MINUTE", "MONTH", "MONTHNAME", "PERIOD_ADD", "PERIOD_DIFF", "QUARTER",
    "SECOND", "SEC_TO_TIME", "STR_TO_DATE", "SUBDATE", "SUBTIME", "TIME", "TIMEDIFF", "TIMESTAMP", "TIMESTAMPADD",
    "TIMESTAMPDIFF", "TIME_FORMAT", "TIME_TO_SEC", "TO_DAYS", "TO_SECONDS", "WEEK", "WEEKDAY", "WEEKOFYEAR", "YEAR",
    "YEARWEEK",
    // JSON
    "JSON_ARRAY", "JSON_OBJECT", "JSON_EXTRACT", "JSON_VALUE", "JSON_QUERY", "JSON_CONTAINS", "JSON_CONTAINS_PATH",
    "JSON_KEYS", "JSON_LENGTH", "JSON_DEPTH", "JSON_TYPE", "JSON_VALID", "JSON_UNQUOTE", "JSON_QUOTE", "JSON_SET",
    "JSON_INSERT", "JSON_REPLACE", "JSON_REMOVE", "JSON_MERGE", "JSON_MERGE_PATCH", "JSON_MERGE_PRESERVE",
    "JSON_SEARCH", "JSON_COMPACT", "JSON_DETAILED", "JSON_PRETTY", "JSON_LOOSE", "JSON_ARRAY_APPEND",
    "JSON_ARRAY_INSERT", "JSON_EXISTS", "JSON_OVERLAPS", "JSON_EQUALS", "JSON_NORMALIZE", "JSON_ARRAY_INTERSECT",
    "JSON_OBJECT_FILTER_KEYS", "JSON_OBJECT_TO_ARRAY", "JSON_KEY_VALUE",
];

/// Keywords (and type names) that may directly precede `(` without being a call.
#[rustfmt::skip]
const PAREN_KEYWORDS: &[&str] = &[
    "IN", "EXISTS", "NOT", "AND", "OR", "XOR", "SELECT", "FROM", "JOIN", "ON", "USING", "WHERE", "HAVING", "BY", "AS",
    "WHEN", "THEN", "ELSE", "CASE", "IS", "ALL", "ANY", "SOME", "LIMIT", "OFFSET", "DISTINCT", "DISTINCTROW", "UNION",
    "INTERSECT", "EXCEPT", "LIKE", "BETWEEN", "REGEXP", "RLIKE", "ROW", "OVER", "PARTITION", "INDEX", "KEY", "TABLE",
    "LATERAL", "WITH", "RECURSIVE", "ESCAPE", "SOUNDS", "BINARY", "ASC", "DESC", "GROUP", "ORDER", "STRAIGHT_JOIN",
    "IGNORE", "FORCE", "USE", "MODE", "EXPANSION", "NULL", "UNKNOWN", "TRUE", "FALSE", "DECIMAL", "DEC", "NUMERIC",
    "FIXED", "VARCHAR", "VARBINARY", "DATETIME", "FLOAT", "DOUBLE", "SIGNED", "UNSIGNED", "INTEGER", "INT", "NCHAR",
    "WINDOW", "ROWS", "RANGE", "PRECEDING", "FOLLOWING", "LEFT", "RIGHT", "INNER", "OUTER", "CROSS", "NATURAL", "DIV",
    "MOD", "COLLATE", "SEPARATOR", "LEADING", "TRAILING", "BOTH", "VALUES", "VALUE",
];

fn contains(list: &[&str], word: &[u8]) -> bool {
    word.len() <= 32 && list.iter().any(|w| w.as_bytes().eq_ignore_ascii_case(word))
}

/// The reason [`call_reason`] gives for a name that is not a builtin.
pub(crate) const UNKNOWN_FUNCTION: &str = "unknown function (stored function or UDF)";

/// Why calling `name(` makes a read uncacheable, if it does.
pub(crate) fn call_reason(name: &[u8]) -> Option<&'static str> {
    if contains(NON_DETERMINISTIC, name) {
        Some("non-deterministic function")
    } else if contains(DETERMINISTIC, name) || contains(PAREN_KEYWORDS, name) {
        None
    } else {
        Some(UNKNOWN_FUNCTION)
    }
}

/// Whether a bare word makes a read uncacheable.
pub(crate) fn bare_denied(word: &[u8]) -> bool {
    contains(BARE_DENY, word)
}
