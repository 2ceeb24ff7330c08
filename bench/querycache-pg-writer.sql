-- Background writer of bench/querycache-pg.sh (as bench/querycache_writer.lua for MySQL): each
-- transaction is one autocommit UPDATE of a pgbench_accounts row, drawn with the point select's
-- skew (the rows most read are the rows most written). Run with pgbench -c 1 -R 65: 65 updates/s.
-- Variables (pgbench -D): naccounts, skew.
\set aid random_exponential(1, :naccounts, :skew)
UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
