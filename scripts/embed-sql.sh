#!/bin/sh
# Embed SQL files in C (the Makefile runs it): an enum constant PREFIX<NAME>
# per file (its name less .sql, upper case, - as _) and PREFIXCOUNT, and,
# where ARRAY_TEXT is defined, ARRAY[]: each file's path and text.
#   sh scripts/embed-sql.sh ARRAY PREFIX FILE.sql... > header.h
# labs/sql/ -> lab_sql.h (LAB_SQL, SQL_), trace/sql/ -> trace_sql.h (TRACE_SQL, TSQL_).
array=$1 prefix=$2
shift 2
lower=$(echo "$array" | tr A-Z a-z)
echo "/* $lower.h -- made by the Makefile (scripts/embed-sql.sh) from $(dirname "$1")/ */"
echo "#ifndef HIPATH_${array}_H"
echo "#define HIPATH_${array}_H"
echo "enum $lower {"
for f; do echo "    $prefix$(basename "$f" .sql | tr a-z- A-Z_),"; done
echo "    ${prefix}COUNT"
echo "};"
echo "#ifdef ${array}_TEXT"
echo "static const struct { const char *file, *text; } $array[${prefix}COUNT] = {"
for f; do
  echo "    { \"$f\","
  sed 's/\\/\\\\/g; s/"/\\"/g; s/^/      "/; s/$/\\n"/' "$f"
  echo "    },"
done
echo "};"
echo "#endif"
echo "#endif"
