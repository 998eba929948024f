#!/bin/bash
# 200,000 albums x 3 rounds, then the full size x 1 round, with the batches' index entries sorted.
set -x
B=/work/fdbench/freedb-bin3
R=/work/wt-freedb/bench/results/2026-11-25-freedb
/usr/bin/time -v $B bench --albums 200000 --rounds 3 --engines jackdaw,jackdaw-txn,sqlite,lmdb --dir /work/fdbench/r200b --json $R/results.json > $R/run.txt 2> $R/stderr.txt
/usr/bin/time -v $B bench --source /work/fdbench/full/freedb-full.tar --rounds 1 --engines jackdaw,sqlite,lmdb --dir /work/fdbench/full/bench2 --json $R/full-bench.json > $R/full-bench.txt 2> $R/full-bench-stderr.txt
echo ALLDONE
