-- sysbench 1.0 script for bench/containers.sh: the plain-SQL side of the containers benchmark.
-- One event = one prepared statement on demo_test (server-side prepared: --db-ps-mode=auto):
--   --mode=get   SELECT c2 FROM demo_test WHERE c1 = ?
--   --mode=set   INSERT ... ON DUPLICATE KEY UPDATE (what a memcached `set` does to the row;
--                INSERT ... ON CONFLICT DO UPDATE with --db-driver=pgsql)
-- Keys are "key:%08d" over 0..keys-1 (uniform), values the 8 digits of the key padded to
-- --value-size bytes: the same rows and values bench/loadgen reads and writes.

sysbench.cmdline.options = {
  mode = {"get or set", "get"},
  keys = {"number of preloaded keys", 100000},
  value_size = {"value length in bytes (set)", 100},
  key_prefix = {"key prefix", "key:"},
}

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  local vs = sysbench.opt.value_size
  local f = {}
  for i = 0, vs - 1 do f[#f + 1] = string.char(97 + i % 26) end
  filler = table.concat(f):sub(9)
  if sysbench.opt.mode == "get" then
    stmt = con:prepare("SELECT c2 FROM demo_test WHERE c1 = ?")
    pk = stmt:bind_create(sysbench.sql.type.VARCHAR, 32)
    stmt:bind_param(pk)
  elseif sysbench.opt.mode == "set" then
    if sysbench.opt.db_driver == "pgsql" then
      -- PostgreSQL's upsert (what the postgres container backend sends for a set)
      stmt = con:prepare("INSERT INTO demo_test (c1, c2, c3, c4, c5) VALUES (?, ?, 0, 1, 0) " ..
        "ON CONFLICT (c1) DO UPDATE SET c2 = EXCLUDED.c2, c3 = EXCLUDED.c3, " ..
        "c4 = demo_test.c4 + 1, c5 = EXCLUDED.c5")
    else
      stmt = con:prepare("INSERT INTO demo_test (c1, c2, c3, c4, c5) VALUES (?, ?, 0, 1, 0) " ..
        "ON DUPLICATE KEY UPDATE c2 = VALUES(c2), c3 = VALUES(c3), c4 = c4 + 1, c5 = VALUES(c5)")
    end
    pk = stmt:bind_create(sysbench.sql.type.VARCHAR, 32)
    pv = stmt:bind_create(sysbench.sql.type.VARCHAR, 1024)
    stmt:bind_param(pk, pv)
  else
    error("--mode must be get or set")
  end
end

function event()
  local i = sysbench.rand.uniform(0, sysbench.opt.keys - 1)
  pk:set(string.format("%s%08d", sysbench.opt.key_prefix, i))
  if pv then
    pv:set(string.format("%08d", i) .. filler)
  end
  stmt:execute()
end

function thread_done()
  stmt:close()
  con:disconnect()
end
