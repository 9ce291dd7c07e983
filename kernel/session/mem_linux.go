package session

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// systemMemAvailable is MemAvailable from /proc/meminfo, bounded by the
// room left under the memory limit of our cgroup (v2), if it has one.
func systemMemAvailable() (uint64, bool) {
	avail, ok := meminfo("MemAvailable")
	if limit, used, ok2 := cgroupMemory(); ok2 {
		room := uint64(0)
		if limit > used {
			room = limit - used
		}
		if !ok || room < avail {
			avail, ok = room, true
		}
	}
	return avail, ok
}

func meminfo(key string) (uint64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != key {
			continue
		}
		fields := strings.Fields(rest) // "123456 kB"
		if len(fields) == 0 {
			return 0, false
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}

// cgroupMemory is memory.max and memory.current of this process's cgroup
// v2; not ok when there is no limit ("max") or no cgroup v2.
func cgroupMemory() (limit, used uint64, ok bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, 0, false
	}
	var dir string
	for _, line := range strings.Split(string(b), "\n") {
		if p, found := strings.CutPrefix(line, "0::"); found {
			dir = "/sys/fs/cgroup" + p
		}
	}
	if dir == "" {
		return 0, 0, false
	}
	read := func(name string) (uint64, bool) {
		b, err := os.ReadFile(dir + "/" + name)
		if err != nil {
			return 0, false
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return v, err == nil // "max" does not parse: no limit
	}
	limit, ok1 := read("memory.max")
	used, ok2 := read("memory.current")
	return limit, used, ok1 && ok2
}
