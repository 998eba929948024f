#!/bin/bash
# The full-size run: 3,328,488 albums (the 2013 dump's count).
set -x
B=/work/fdbench/freedb-full-bin
D=/work/fdbench/full
rm -rf $D; mkdir -p $D
cd $D
/usr/bin/time -v $B generate --albums 3328488 --seed 1 -o freedb-full.tar
ls -l freedb-full.tar
/usr/bin/time -v $B import -q freedb-full.tar db-tar
$B stats db-tar
du -sb db-tar
rm -rf db-tar
/usr/bin/time -v $B bench --source freedb-full.tar --rounds 1 --engines jackdaw,sqlite,lmdb --dir $D/bench --json $D/bench.json
rm -f freedb-full.tar
/usr/bin/time -v $B generate --albums 3328488 --seed 1 -o freedb-full.tar.bz2
ls -l freedb-full.tar.bz2
/usr/bin/time -v $B import -q freedb-full.tar.bz2 db-bz2
rm -rf db-bz2
echo ALLDONE
