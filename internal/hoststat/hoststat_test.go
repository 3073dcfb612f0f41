package hoststat

import "testing"

func TestParseMemAvailable(t *testing.T) {
	const meminfo = "MemTotal:       24567892 kB\nMemFree:        20000000 kB\nMemAvailable:   23000000 kB\nBuffers:          1000 kB\n"
	if got, want := ParseMemAvailable(meminfo), int64(23000000*1024); got != want {
		t.Errorf("ParseMemAvailable = %d, want %d", got, want)
	}
	if got := ParseMemAvailable("MemTotal: 1 kB\n"); got != 0 {
		t.Errorf("without MemAvailable = %d, want 0", got)
	}
}

func TestParseCPU(t *testing.T) {
	const stat = "cpu  100 5 50 800 40 3 2 0 0 0\ncpu0 50 2 25 400 20 1 1 0 0 0\nintr 1\n"
	got, err := ParseCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := (CPUTicks{Busy: 160, Total: 1000}); got != want {
		t.Errorf("ParseCPU = %+v, want %+v (idle 800 and iowait 40 are not busy)", got, want)
	}
	if _, err := ParseCPU("cpu0 1 2 3 4 5\n"); err == nil {
		t.Error("no summed cpu line: no error")
	}
	if _, err := ParseCPU("cpu  1 2 x 4 5 6\n"); err == nil {
		t.Error("a field that is no number: no error")
	}
	busy, cpus := (CPUTicks{Busy: 360, Total: 1400}).Since(got, 2)
	if busy != 2 || cpus != 1 {
		t.Errorf("Since = %v s, %v CPUs; want 2 s, 1 of 2 CPUs", busy, cpus)
	}
}

func TestReadsThisHost(t *testing.T) {
	if n, err := MemAvailable(); err != nil || n <= 0 {
		t.Errorf("MemAvailable = %d, %v", n, err)
	}
	if n, err := MemTotal(); err != nil || n <= 0 {
		t.Errorf("MemTotal = %d, %v", n, err)
	}
	if c, err := CPU(); err != nil || c.Total == 0 || c.Busy > c.Total {
		t.Errorf("CPU = %+v, %v", c, err)
	}
}
