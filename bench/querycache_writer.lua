-- Background writer of bench/querycache.sh (as seed 004's modified update_index.lua): each event
-- is one `UPDATE sbtestN SET k=k+1 WHERE id=<rand>` on a uniformly chosen table, the id drawn
-- with sysbench's --rand-type (default: special, the skewed distribution the readers use).
-- Run with --rate=65 for 65 updates/s.
sysbench.cmdline.options = {
  tables = {"Number of tables", 4},
  table_size = {"Number of rows per table", 100000},
}

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end

function event()
  local t = sysbench.rand.uniform(1, sysbench.opt.tables)
  local id = sysbench.rand.default(1, sysbench.opt.table_size)
  con:query(string.format("UPDATE sbtest%d SET k=k+1 WHERE id=%d", t, id))
end

function thread_done()
  con:disconnect()
end
