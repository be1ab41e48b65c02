// The spawn_1m workload in Go, for comparison with smarm's: 1,000,000
// goroutines started with the go statement, each parked on a channel of
// its own, then released and waited for, twice. GOMAXPROCS=2, as smarm's
// two schedulers. Prints the same RESULT/EXTRA lines as smarm's bench.
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	n     = 1000000
	fifth = n / 5
)

func extra(metric string, value float64, unit string) {
	fmt.Printf("EXTRA peer=go workload=spawn_1m metric=%s value=%.1f unit=%s\n", metric, value, unit)
}

func statusKiB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, field+":") {
			kb, err := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			if err != nil {
				panic(err)
			}
			return kb
		}
	}
	panic(field + " not found")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

func round(prefix string) (time.Duration, []time.Duration) {
	var wg sync.WaitGroup
	wg.Add(n)
	chans := make([]chan struct{}, n)
	fifths := make([]time.Duration, 0, 5)
	t0 := time.Now()
	mark := t0
	for i := 0; i < n; i++ {
		c := make(chan struct{})
		chans[i] = c
		go func() {
			<-c
			wg.Done()
		}()
		if (i+1)%fifth == 0 {
			now := time.Now()
			fifths = append(fifths, now.Sub(mark))
			mark = now
		}
	}
	spawned := time.Since(t0)
	extra(prefix+"first_200k", ms(fifths[0]), "ms")
	extra(prefix+"last_200k", ms(fifths[4]), "ms")
	extra(prefix+"rss_parked", float64(statusKiB("VmRSS"))/1024, "MiB")
	extra(prefix+"page_tables_parked", float64(statusKiB("VmPTE"))/1024, "MiB")
	t1 := time.Now()
	for _, c := range chans {
		c <- struct{}{}
	}
	wg.Wait()
	extra(prefix+"release_and_join", ms(time.Since(t1)), "ms")
	return spawned, fifths
}

func main() {
	runtime.GOMAXPROCS(2)
	spawned, fifths := round("")
	_, again := round("round2_")
	extra("last_over_first", float64(fifths[4])/float64(fifths[0]), "x")
	extra("round2_last_over_first", float64(again[4])/float64(again[0]), "x")
	fmt.Printf("RESULT peer=go workload=spawn_1m value=%.1f unit=ms\n", ms(spawned))
	extra("peak_rss", float64(statusKiB("VmHWM")), "KiB")
}
