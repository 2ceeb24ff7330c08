-- bench/querycache-pg.sh's point select (issue 41 item 6): one pgbench_accounts row by its
-- primary key, about 100 bytes (as sysbench's oltp_point_select reads sbtest.c), the key drawn
-- skewed: random_exponential with :skew = 138.6 puts 75 % of the reads on the first 1 % of the
-- rows, as sysbench's default --rand-type=special (75 % on 1 %) does for the MySQL benchmark.
-- Variables (pgbench -D): naccounts (100000 x scale), skew.
\set aid random_exponential(1, :naccounts, :skew)
SELECT abalance, filler FROM pgbench_accounts WHERE aid = :aid;
