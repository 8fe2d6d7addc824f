package integration

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testproc"
	"github.com/redamo/redamo/internal/testserver"
)

// bullmqSummary is what compat/clients/bullmq/bullmq.js prints.
type bullmqSummary struct {
	BullMQ  string         `json:"bullmq"`
	IORedis string         `json:"ioredis"`
	Ms      int            `json:"ms"`
	Counts  map[string]int `json:"counts"`
	Events  struct {
		Completed int `json:"completed"`
		Failed    int `json:"failed"`
	} `json:"events"`
	Errors []string `json:"errors"`
	Jobs   []struct {
		ID                 string   `json:"id"`
		Kind               string   `json:"kind"`
		State              string   `json:"state"`
		AttemptsMade       int      `json:"attemptsMade"`
		ReturnValue        any      `json:"returnvalue"`
		Runs               int      `json:"runs"`
		Workers            []string `json:"workers"`
		FirstRunAfterAddMs int      `json:"firstRunAfterAddMs"`
		Delay              int      `json:"delay"`
		GapsMs             []int    `json:"gapsMs"`
	} `json:"jobs"`
}

// TestBullMQ runs BullMQ, unchanged, over two redamo instances on one
// DynamoDB Local table: a producer, a QueueEvents listener (XREAD BLOCK)
// and a worker on one instance, a second worker on the other. Every job is
// processed exactly once, delayed ones not before their delay, retried
// ones after their backoff, and the failing ones end failed.
func TestBullMQ(t *testing.T) {
	dir, err := filepath.Abs("../compat/clients/bullmq")
	require.NoError(t, err)
	node := testserver.NodeModules(t, dir)
	cs := cluster(t, 2)
	ports := make([]string, len(cs))
	for i, c := range cs {
		_, ports[i], _ = strings.Cut(c.Options().Addr, ":")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "bullmq.js", ports[0], ports[1], "jobs")
	cmd.Dir = dir
	testproc.Prepare(cmd)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node bullmq.js:\n%s%s", out, stderr.String())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var s bullmqSummary
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &s), "%s", out)

	require.Equal(t, "5.81.5", s.BullMQ)
	require.Empty(t, s.Errors, "worker errors")
	require.Equal(t, 75, s.Counts["completed"], "%v", s.Counts)
	require.Equal(t, 2, s.Counts["failed"], "%v", s.Counts)
	require.Equal(t, 75, s.Events.Completed, "completed events seen by QueueEvents")
	require.Equal(t, 2, s.Events.Failed, "failed events seen by QueueEvents")
	kinds := map[string]int{}
	workers := map[string]bool{}
	for _, j := range s.Jobs {
		kinds[j.Kind]++
		for _, w := range j.Workers {
			workers[w] = true
		}
		switch j.Kind {
		case "plain", "delayed":
			require.Equal(t, "completed", j.State, "job %s", j.ID)
			require.Equal(t, 1, j.Runs, "job %s (%s) ran %d times", j.ID, j.Kind, j.Runs)
			require.NotNil(t, j.ReturnValue, "job %s", j.ID)
			if j.Kind == "delayed" {
				require.GreaterOrEqual(t, j.FirstRunAfterAddMs, j.Delay, "delayed job %s ran early", j.ID)
			}
		case "retried":
			require.Equal(t, "completed", j.State, "job %s", j.ID)
			require.Equal(t, 3, j.Runs, "job %s", j.ID)
			require.Equal(t, 3, j.AttemptsMade, "job %s", j.ID)
			// Exponential backoff: 100 ms, then 200 ms.
			require.GreaterOrEqual(t, j.GapsMs[0], 100, "job %s", j.ID)
			require.GreaterOrEqual(t, j.GapsMs[1], 200, "job %s", j.ID)
		case "failing":
			require.Equal(t, "failed", j.State, "job %s", j.ID)
			require.Equal(t, 2, j.Runs, "job %s", j.ID)
			require.Equal(t, 2, j.AttemptsMade, "job %s", j.ID)
			require.GreaterOrEqual(t, j.GapsMs[0], 50, "job %s", j.ID)
		}
	}
	require.Equal(t, map[string]int{"plain": 60, "delayed": 10, "retried": 5, "failing": 2}, kinds)
	require.Len(t, workers, 2, "both workers (one per instance) processed jobs")
	t.Logf("BullMQ %s (ioredis %s) over 2 instances: %d jobs in %d ms, counts %v, events %d completed / %d failed",
		s.BullMQ, s.IORedis, len(s.Jobs), s.Ms, s.Counts, s.Events.Completed, s.Events.Failed)
}
