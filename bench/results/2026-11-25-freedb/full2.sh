#!/bin/bash
# The full-size pipeline again with the batches' index entries sorted (and in --mode txn).
set -x
B=/work/fdbench/freedb-full-bin2
D=/work/fdbench/full
cd $D
rm -f freedb-full.tar.bz2
$B generate --albums 3328488 --seed 1 -o freedb-full.tar
rm -rf db-a db-b
/usr/bin/time -v $B import -q freedb-full.tar db-a
rm -rf db-a
/usr/bin/time -v $B import -q --mode txn freedb-full.tar db-b
rm -rf db-b
echo ALLDONE
