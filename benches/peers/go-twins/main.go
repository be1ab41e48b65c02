// Go twins of smarm workloads that the shared peer suite does not have:
//
//	yield        two goroutines calling runtime.Gosched in turn on one P
//	             (GOMAXPROCS=1): ns per switch, as smarm's yield workload
//	timers_warm  the timers workload twice in one process (100,000
//	             goroutines sleeping 50 ms): the second burst's ms, the
//	             first as an EXTRA line; GOMAXPROCS=2
//
// Prints the same RESULT/EXTRA lines as smarm's bench.
package main

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

const (
	yields       = 2000000
	timersN      = 100000
	timersSleep  = 50 * time.Millisecond
	notifyBuffer = 1024
)

func report(workload string, value float64, unit string) {
	fmt.Printf("RESULT peer=go workload=%s value=%.1f unit=%s\n", workload, value, unit)
}

func yield() {
	runtime.GOMAXPROCS(1)
	var wg sync.WaitGroup
	wg.Add(2)
	t := time.Now()
	for g := 0; g < 2; g++ {
		go func() {
			for i := 0; i < yields/2; i++ {
				runtime.Gosched()
			}
			wg.Done()
		}()
	}
	wg.Wait()
	report("yield", float64(time.Since(t).Nanoseconds())/yields, "ns/switch")
}

// The shared suite's timers workload: ms for the whole burst.
func timersBurst() float64 {
	t := time.Now()
	done := make(chan struct{}, notifyBuffer)
	for i := 0; i < timersN; i++ {
		go func() {
			time.Sleep(timersSleep)
			done <- struct{}{}
		}()
	}
	for i := 0; i < timersN; i++ {
		<-done
	}
	return float64(time.Since(t).Nanoseconds()) / 1e6
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gotwins yield|timers_warm")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "yield":
		yield()
	case "timers_warm":
		runtime.GOMAXPROCS(2)
		cold := timersBurst()
		fmt.Printf("EXTRA peer=go workload=timers_warm metric=cold value=%.1f unit=ms\n", cold)
		report("timers_warm", timersBurst(), "ms")
	default:
		fmt.Fprintln(os.Stderr, "unknown workload", os.Args[1])
		os.Exit(2)
	}
}
