package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// broker is the Kafka broker the gateway is compared with.
type broker struct {
	bootstrap string
	pid       int    // 0: not on this machine or not known (no CPU/RSS figures)
	name      string // the kafka-local.sh instance this bench started; "" if given
}

// parseKeyValues reads the KEY=VALUE lines of a script's stdout.
func parseKeyValues(out string) map[string]string {
	kv := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok && k != "" {
			kv[k] = v
		}
	}
	return kv
}

// kafkaScript runs scripts/kafka-local.sh with args; its progress goes to
// our stderr, its stdout is returned.
func kafkaScript(ctx context.Context, root string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "kafka-local.sh"), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("scripts/kafka-local.sh %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), nil
}

// startBroker starts a broker with kafka-local.sh that stops by itself when
// this process exits, even if it is killed.
func startBroker(ctx context.Context, root, version string, partitions int) (*broker, error) {
	name := "gwbench-" + randHex()
	out, err := kafkaScript(ctx, root, "start", "-s", name, "-v", version,
		"-p", strconv.Itoa(partitions), "-o", strconv.Itoa(os.Getpid()))
	if err != nil {
		return nil, err
	}
	kv := parseKeyValues(out)
	pid, err := strconv.Atoi(kv["KAFKA_PID"])
	if err != nil || kv["KAFKA_BOOTSTRAP"] == "" {
		return nil, fmt.Errorf("scripts/kafka-local.sh start printed no KAFKA_BOOTSTRAP/KAFKA_PID: %q", out)
	}
	return &broker{bootstrap: kv["KAFKA_BOOTSTRAP"], pid: pid, name: name}, nil
}

// useBroker is the -kafka-bootstrap broker, or one started for this run;
// stop ends the one started (and does nothing for a given one).
func useBroker(ctx context.Context, o *options, root string) (b *broker, stop func(), err error) {
	if o.kafkaBootstrap != "" {
		return &broker{bootstrap: o.kafkaBootstrap, pid: o.kafkaPID}, func() {}, nil
	}
	if b, err = startBroker(ctx, root, o.kafkaVersion, o.buckets); err != nil {
		return nil, nil, err
	}
	return b, func() {
		if err := b.stop(root); err != nil {
			fmt.Fprintln(os.Stderr, "gateway-bench: stop broker:", err)
		}
	}, nil
}

// stop ends a broker this bench started.
func (b *broker) stop(root string) error {
	if b.name == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := kafkaScript(ctx, root, "stop", "-s", b.name)
	return err
}

// createKafkaTopics creates the topics with partitions partitions each,
// replication factor 1, and waits until every partition has a leader.
func createKafkaTopics(ctx context.Context, cl *kgo.Client, topics []string, partitions int) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30_000
	for _, t := range topics {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic = t
		rt.NumPartitions = int32(partitions)
		rt.ReplicationFactor = 1
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", t.Topic, err)
		}
	}
	for _, t := range topics {
		if _, err := kafkaEndOffset(ctx, cl, t, partitions); err != nil {
			return err
		}
	}
	return nil
}

// kafkaEndOffset is the topic's log end offsets (ListOffsets latest)
// summed over its partitions, retried while the partitions have no leader
// yet (for up to 30 s).
func kafkaEndOffset(ctx context.Context, cl *kgo.Client, topic string, partitions int) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		sum, err := listEndOffsets(ctx, cl, topic, partitions)
		if err == nil || !kerr.IsRetriable(err) {
			return sum, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("end offsets of %s: %w (last: %w)", topic, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func listEndOffsets(ctx context.Context, cl *kgo.Client, topic string, partitions int) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = int32(p)
		rp.CurrentLeaderEpoch = -1
		rp.Timestamp = -1 // latest
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	// franz-go splits the request by partition leader and merges the answers.
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("list offsets of %s: %w", topic, err)
	}
	var sum int64
	seen := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return 0, fmt.Errorf("list offsets of %s/%d: %w", topic, p.Partition, err)
			}
			sum += p.Offset
			seen++
		}
	}
	if seen != partitions {
		return 0, fmt.Errorf("list offsets of %s: %d partitions answered, want %d", topic, seen, partitions)
	}
	return sum, nil
}

// parseTabletPIDs reads the tablet servers' pids from the output of
// scripts/fluss-local.sh status ("  tablet-0     running  pid 12333 ...").
func parseTabletPIDs(status string) []int {
	var pids []int
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 4 && strings.HasPrefix(f[0], "tablet-") && f[1] == "running" && f[2] == "pid" {
			if pid, err := strconv.Atoi(f[3]); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// detectFlussPIDs asks scripts/fluss-local.sh for the tablet servers of
// cluster name (FLUSS_LOCAL_CLUSTER); nil when there is none.
func detectFlussPIDs(ctx context.Context, root, name string) []int {
	if name == "" {
		return nil
	}
	out, _ := exec.CommandContext(ctx, filepath.Join(root, "scripts", "fluss-local.sh"), "status", "-s", name).Output()
	return parseTabletPIDs(string(out))
}
