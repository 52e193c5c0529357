#!/bin/bash
# Client CPU per GiB, Ferry vs GCT, 1 GiB memory to memory over ferry wan (10 ms each way, 1 Gbit/s, cubic)
B=/tmp/ferry-final; OUT=/tmp/b17/out/wancpu.txt; : > $OUT
for rep in 1 2; do for p in 1 4 16; do
  a=""; [ $p != 1 ] && a="-p $p"
  $B wan -delay 10ms -rate 1G -name fw17 -server "/usr/sbin/globus-gridftp-server -aa -anonymous-user nobody -p 5100 -control-interface 0.0.0.0 -home-dir / -disable-usage-stats" -wait-port 5100 -timeout 120s \
    -client "/usr/bin/time -f 'gct p=$p rep $rep: %e s wall, %U+%S s CPU' globus-url-copy $a -len 1073741824 ftp://\$FERRY_WAN_SERVER_ADDR:5100/dev/zero file:///dev/null" 2>&1 | grep "rep $rep:" >> $OUT
  $B wan -delay 10ms -rate 1G -name fw17 -server "$B serve -listen 0.0.0.0:5100 -anonymous -log-level warn -storage null" -wait-port 5100 -timeout 120s \
    -client "FERRY_HISTORY=off /usr/bin/time -f 'ferry p=$p rep $rep: %e s wall, %U+%S s CPU' $B cp -q -auto=false $a ftp://\$FERRY_WAN_SERVER_ADDR:5100/1G /dev/null" 2>&1 | grep "rep $rep:" >> $OUT
done; done
echo WANDONE >> $OUT
