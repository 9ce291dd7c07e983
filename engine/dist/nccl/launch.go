package nccl

import (
	"fmt"
	"strconv"
	"strings"
)

// Launch is a process's place in a run started by a launcher.
type Launch struct {
	Rank, Size int
	// Local is the rank's index among the ranks on its machine: it picks
	// the GPU.
	Local int
	// Launcher names where the numbers came from, for messages
	// ("OpenMPI", "Slurm", ...).
	Launcher string
}

// launchers are the environment variables each launcher sets: rank, size,
// local rank. Slurm's are srun's (SLURM_STEP_NUM_TASKS is set by srun
// alone, not in an sbatch script's own shell, which is no rank of a run).
var launchers = []struct{ name, rank, size, local string }{
	{"OpenMPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
	{"MPICH", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
	{"Slurm", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID"},
	{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
}

// FromEnv reads the first launcher whose rank and size variables are both
// set; ok is false when none is (a process started by hand). A local rank
// that is not set is an error for a run of several processes (which GPU
// to use is unknown) and 0 for one.
func FromEnv(getenv func(string) string) (l Launch, ok bool, err error) {
	for _, v := range launchers {
		rs, ss := getenv(v.rank), getenv(v.size)
		if rs == "" || ss == "" {
			continue
		}
		l.Launcher = v.name
		num := func(name, s string) (int, error) {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 0 {
				return 0, fmt.Errorf("%s=%q: not a rank or a count (%s sets it)", name, s, v.name)
			}
			return n, nil
		}
		if l.Rank, err = num(v.rank, rs); err != nil {
			return l, true, err
		}
		if l.Size, err = num(v.size, ss); err != nil {
			return l, true, err
		}
		if l.Rank >= l.Size {
			return l, true, fmt.Errorf("%s=%d is not below %s=%d", v.rank, l.Rank, v.size, l.Size)
		}
		if ls := getenv(v.local); ls != "" {
			if l.Local, err = num(v.local, ls); err != nil {
				return l, true, err
			}
		} else if l.Size > 1 {
			return l, true, fmt.Errorf("%s and %s are set but not %s: which GPU this rank uses is unknown; set %s to the rank's index on its machine",
				v.rank, v.size, v.local, v.local)
		}
		return l, true, nil
	}
	return Launch{}, false, nil
}
