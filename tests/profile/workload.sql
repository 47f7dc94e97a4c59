-- tests/profile: the sqlite3 shell's workload on an in-memory database (run_compare.sh feeds it
-- to `sqlite3 :memory:`): bulk inserts through an index, range and point lookups by primary key
-- and by index, a group-by, a join, an update and a delete, then a check of the result.
-- @ROWS@ and @LOOKUPS@ set the size (the test and the bench substitute them).
CREATE TABLE t(a INTEGER PRIMARY KEY, b INTEGER, c TEXT);
CREATE INDEX tb ON t(b);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < @ROWS@)
  INSERT INTO t SELECT i, (i * 7919) % 10007, printf('row-%08d', i) FROM n;
CREATE TABLE u(x INTEGER PRIMARY KEY, y TEXT, z REAL);
INSERT INTO u SELECT b, max(c), avg(a) FROM t GROUP BY b;
SELECT count(*), sum(length(c)) FROM t WHERE b BETWEEN 100 AND 2000;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < @LOOKUPS@)
  SELECT sum((SELECT b FROM t WHERE a = n.i * 2)) FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < @LOOKUPS@)
  SELECT count((SELECT a FROM t WHERE b = n.i % 10007 LIMIT 1)) FROM n;
SELECT b, count(*), avg(a) FROM t GROUP BY b ORDER BY 2 DESC, 1 LIMIT 3;
SELECT count(*), sum(u.z) FROM t JOIN u ON t.b = u.x WHERE t.a % 7 = 0;
UPDATE t SET c = c || '-x' WHERE b % 3 = 0;
DELETE FROM t WHERE a % 5 = 0;
SELECT count(*), max(c) FROM t;
