// Command gateway is the Kafka-compatible producer gateway for Apache Fluss.
//
//	gateway -config gateway.yaml            serve
//	gateway validate -config gateway.yaml   check the config against the Fluss tables, then exit
//	gateway credentials add -user alice [-mechanism SCRAM-SHA-256,...] [-file credentials.yaml] < password
//
// SIGHUP (or a change of the file) reloads the routes; SIGTERM or SIGINT
// stops gracefully within shutdown.deadline; a second one exits at once.
// Everything else lives in package gateway: this file parses flags, loads
// the configuration and turns signals into calls.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/fluss-kafka/gateway/configs"
	"github.com/fluss-kafka/gateway/credentials"
	"github.com/fluss-kafka/gateway/gateway"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 1 && args[0] == "credentials" && args[1] == "add" {
		return credentialsAdd(args[2:], stdin, stdout, stderr)
	}
	if len(args) > 1 && args[0] == "tables" && (args[1] == "plan" || args[1] == "apply") {
		return tables(args[1] == "apply", args[2:], stdout, stderr)
	}
	validateOnly := false
	if len(args) > 0 && args[0] == "validate" {
		validateOnly, args = true, args[1:]
	}
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "configs/gateway.yaml", "path of the YAML configuration file")
	watch := fs.Duration("watch-interval", 2*time.Second, "how often to check the config file for changes (0 = only on SIGHUP)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := configs.Load(*path)
	if err != nil {
		fmt.Fprintln(stderr, "gateway:", err)
		return 1
	}
	log := gateway.NewLogger(cfg.Logging, stderr)
	slog.SetDefault(log)

	if validateOnly {
		return validate(cfg, stdout, stderr)
	}
	// The Go heap limit follows the container's memory limit (90 %;
	// GOMEMLIMIT, or AUTOMEMLIMIT=off, overrides it), so the collector works
	// harder before the kernel would kill the process.
	if limit, err := memlimit.Set(memlimit.WithLogger(log)); err != nil {
		log.Debug("no container memory limit: Go memory limit unchanged", slog.Any("err", err))
	} else if limit < math.MaxInt64 {
		log.Info("Go memory limit", slog.Int64("bytes", limit))
	}
	g, err := gateway.New(cfg, log)
	if err != nil {
		log.Error("start", slog.Any("err", err))
		return 1
	}
	if err := g.Listen(); err != nil {
		log.Error("start", slog.Any("err", err))
		return 1
	}

	ctx, stop := context.WithCancel(context.Background())
	force, forceStop := context.WithCancel(context.Background())
	defer stop()
	defer forceStop()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	reloads := make(chan struct{}, 1)
	requestReload := func() {
		select {
		case reloads <- struct{}{}:
		default:
		}
	}
	go func() { // ends with the process
		stopping := false
		for s := range sigs {
			switch {
			case s == syscall.SIGHUP:
				requestReload()
			case !stopping:
				stopping = true
				log.Info("signal received, stopping", slog.String("signal", s.String()))
				stop()
			default:
				log.Warn("second signal received, exiting at once", slog.String("signal", s.String()))
				forceStop()
				os.Exit(130)
			}
		}
	}()
	go func() { // ends with ctx
		for {
			select {
			case <-ctx.Done():
				return
			case <-reloads:
				g.Reload(ctx, *path)
			}
		}
	}()
	if *watch > 0 {
		go watchFile(ctx, *path, *watch, requestReload)
	}

	if err := g.Run(ctx, force); err != nil {
		log.Error("gateway stopped with errors", slog.Any("err", err))
		return 1
	}
	return 0
}

// validate checks the configuration against the real tables and exits.
func validate(cfg *configs.Config, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Fluss.RequestTimeout+cfg.Fluss.DialTimeout)
	defer cancel()
	v, err := gateway.Validate(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "gateway validate: configuration refused:")
		var joined interface{ Unwrap() []error }
		errs := []error{err}
		if errors.As(err, &joined) {
			errs = joined.Unwrap()
		}
		for _, e := range errs {
			fmt.Fprintln(stderr, "  -", e)
		}
		return 1
	}
	for _, r := range v.Routes.All() {
		fmt.Fprintf(stdout, "route %s -> %s: ok\n", r.Name(), r.Table())
	}
	// Accepted, but an operator should know: printed, not a failure.
	for _, w := range v.Warnings {
		fmt.Fprintln(stderr, "gateway validate: warning:", w)
	}
	return 0
}

// tables prints (and, with apply, issues) what each route's table needs
// to hold its value subject's latest writer schema.
func tables(apply bool, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gateway tables", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "configs/gateway.yaml", "path of the YAML configuration file")
	route := fs.String("route", "", "only this route (its name)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := configs.Load(*path)
	if err != nil {
		fmt.Fprintln(stderr, "gateway:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*(cfg.Fluss.RequestTimeout+cfg.Fluss.DialTimeout))
	defer cancel()
	plans, err := gateway.PlanTables(ctx, cfg, *route)
	if err != nil {
		fmt.Fprintln(stderr, "gateway tables:", err)
		return 1
	}
	problems := false
	for _, p := range plans {
		fmt.Fprint(stdout, p.String())
		problems = problems || len(p.Problems) > 0
	}
	if apply {
		if err := gateway.ApplyTables(ctx, cfg, plans); err != nil {
			fmt.Fprintln(stderr, "gateway tables apply:", err)
			return 1
		}
		fmt.Fprintln(stdout, "-- applied")
	}
	if problems {
		return 1
	}
	return 0
}

// credentialsAdd makes a user's entry of the credentials file from the
// password on stdin (argv is visible to every user of the machine) and
// merges it into -file, or prints a file of that user.
func credentialsAdd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gateway credentials add", flag.ContinueOnError)
	fs.SetOutput(stderr)
	user := fs.String("user", "", "the SASL user name (required)")
	mechs := fs.String("mechanism", strings.Join(credentials.Mechanisms(), ","), "comma-separated mechanisms to make entries for")
	iterations := fs.Int("iterations", 0, fmt.Sprintf("PBKDF2 iterations (0: SCRAM %d, PLAIN %d)", credentials.DefaultSCRAMIterations, credentials.DefaultPlainIterations))
	file := fs.String("file", "", "merge the entry into this credentials file (created mode 0600) instead of printing it")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *user == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "gateway credentials add: -user is required, and the password is read from stdin, not from arguments")
		return 2
	}
	mechanisms, err := credentials.ParseMechanisms(strings.Split(*mechs, ","))
	if err != nil {
		fmt.Fprintln(stderr, "gateway credentials add: -mechanism:", err)
		return 2
	}
	password, err := io.ReadAll(io.LimitReader(stdin, 4096))
	if err != nil {
		fmt.Fprintln(stderr, "gateway credentials add: read the password:", err)
		return 1
	}
	password = []byte(strings.TrimSuffix(strings.TrimSuffix(string(password), "\n"), "\r"))
	entry, err := credentials.MakeEntry(mechanisms, password, *iterations)
	if err == nil && *file != "" {
		err = credentials.AddToFile(*file, *user, entry)
	} else if err == nil {
		var data []byte
		if data, err = credentials.Add(nil, *user, entry); err == nil {
			_, err = stdout.Write(data)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "gateway credentials add:", err)
		return 1
	}
	return 0
}

// watchFile calls onChange whenever the file's size or modification time
// changes, polling every interval until ctx ends. Polling survives editors
// that replace the file and needs no platform-specific notification API.
func watchFile(ctx context.Context, path string, interval time.Duration, onChange func()) {
	stamp := func() (time.Time, int64) {
		fi, err := os.Stat(path)
		if err != nil {
			return time.Time{}, -1
		}
		return fi.ModTime(), fi.Size()
	}
	lastMod, lastSize := stamp()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			mod, size := stamp()
			if size < 0 || (mod.Equal(lastMod) && size == lastSize) {
				continue
			}
			lastMod, lastSize = mod, size
			onChange()
		}
	}
}
