package bench

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"
)

func TestWriteReplicasTable(t *testing.T) {
	cfg := ReplicasConfig{Rates: []int64{100e6, 200e6, 400e6}, Size: 1 << 30, Reps: 2, Kill: true}
	const gib = 1 << 30
	sec := func(mbps float64) time.Duration {
		return time.Duration(float64(gib*8) / (mbps * 1e6) * float64(time.Second))
	}
	results := []ReplicasResult{
		{Mode: ReplicaSingle, Bytes: gib, Wall: sec(380), Read: []int64{0, 0, gib}, Identical: true},
		{Mode: ReplicaSingle, Rep: 1, Bytes: gib, Wall: sec(390), Read: []int64{0, 0, gib}, Identical: true},
		{Mode: ReplicaMulti, Bytes: gib, Wall: sec(660), Read: []int64{150 << 20, 300 << 20, 574 << 20}, Identical: true},
		{Mode: ReplicaMulti, Rep: 1, Bytes: gib, Wall: sec(640), Read: []int64{150 << 20, 300 << 20, 574 << 20}, Identical: true},
		{Mode: ReplicaKilled, Bytes: gib, Wall: sec(400), Read: []int64{300 << 20, 500 << 20, 224 << 20}, Identical: true},
		{Mode: ReplicaKilled, Rep: 1, Bytes: gib, Err: "ferry cp: exit status 1"},
	}
	var b bytes.Buffer
	if err := WriteReplicasTable(&b, cfg, results); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"| single source (ferry cp lfn:) | 400 | 385 (380–390) | 0.96 | 100 Mbit/s: 0, 200 Mbit/s: 0, 400 Mbit/s: 1024 | 2 of 2 |",
		"| multi-source (ferry cp -sources 3 lfn:) | 700 | 650 (640–660) | 0.93 | 100 Mbit/s: 150, 200 Mbit/s: 300, 400 Mbit/s: 574 | 2 of 2 |",
		"| multi-source, the 400 Mbit/s replica killed at ¼ | 700 | 400 (400–400), 1 failed | 0.57 |",
		"- The single source chosen was the 400 Mbit/s replica in 2 of 2 runs.",
		"- The multi-source download reached 0.93 × the sum of the links (≥ 0.9 wanted: holds).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	b.Reset()
	if err := WriteReplicasCSV(&b, cfg, results); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) != 7 || len(recs[0]) != 12 || recs[0][6] != "read_from_100000000" {
		t.Errorf("CSV %v (%v)", recs, err)
	}
}
