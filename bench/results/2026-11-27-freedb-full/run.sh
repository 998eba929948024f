#!/bin/bash
# Full-size freedb peer comparison (issue 22 floors), rocks build paused meanwhile.
set -x

B=/work/fdbench/freedb-bin
D=/work/fdbench/full2
rm -rf $D; mkdir -p $D; cd $D
/usr/bin/time -v $B generate --albums 3328488 --seed 1 -o freedb-full.tar
ls -l freedb-full.tar
/usr/bin/time -v $B bench --source freedb-full.tar --rounds 1 --engines jackdaw,sqlite,lmdb --dir $D/bench --json $D/bench.json

echo ALLDONE
