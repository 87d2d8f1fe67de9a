package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kraftd/kraftd/kit"
)

// clusterCommand is `kraftd cluster up|status|down`: the kit package from a
// shell, for a developer's machine.
func clusterCommand() *cli.Command {
	dataFlag := &cli.StringFlag{Name: "data", Usage: "directory keeping the cluster's data, logs and cluster.json across runs (default: a temporary one, removed at exit)"}
	return &cli.Command{
		Name:  "cluster",
		Usage: "run a local Kafka cluster: Apache brokers on a kraftd quorum",
		Subcommands: []*cli.Command{
			{
				Name:  "up",
				Usage: "start a cluster and keep it in the foreground (Ctrl-C stops it all), or in the background with --detach",
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "brokers", Value: 1, Usage: "Apache Kafka brokers (node ids 101...)"},
					&cli.StringFlag{Name: "kafka", Value: kit.DefaultVersion, Usage: "Apache Kafka version of the brokers, 3.9.x to 4.4.x (fetched with Maven the first time)"},
					&cli.IntFlag{Name: "controllers", Value: 3, Usage: "kraftd controllers (node ids 1...)"},
					&cli.IntFlag{Name: "apache-controllers", Usage: "Apache Kafka controllers in the same quorum, after kraftd's"},
					&cli.StringSliceFlag{Name: "broker-config", Usage: "key=value added to every broker's server.properties (repeatable)"},
					&cli.BoolFlag{Name: "tls", Usage: "every listener speaks TLS, with a CA and certificate the kit makes (clients trust the printed CA file)"},
					&cli.StringFlag{Name: "sasl", Usage: "every listener asks for SASL: the brokers' with this mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512), the controllers' with PLAIN; one user, kit, whose password is printed"},
					dataFlag,
					&cli.BoolFlag{Name: "detach", Usage: "start in the background and return once ready (needs --data); stop with `kraftd cluster down`"},
				},
				Action: runClusterUp,
			},
			{
				Name:   "status",
				Usage:  "show a detached cluster's nodes and whether each runs",
				Flags:  []cli.Flag{&cli.StringFlag{Name: "data", Required: true, Usage: "the cluster's --data directory"}},
				Action: runClusterStatus,
			},
			{
				Name:   "down",
				Usage:  "stop a detached cluster (its data stays in --data)",
				Flags:  []cli.Flag{&cli.StringFlag{Name: "data", Required: true, Usage: "the cluster's --data directory"}},
				Action: runClusterDown,
			},
		},
	}
}

// readyBanner starts the line `up` prints once the cluster is ready; a
// detaching `up` waits for it in the background run's log.
const readyBanner = "bootstrap servers: "

func runClusterUp(c *cli.Context) error {
	spec, err := clusterSpec(c)
	if err != nil {
		return err
	}
	if c.Bool("detach") {
		return detach(c)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cluster, err := kit.Start(ctx, spec)
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	defer cluster.Stop()
	fmt.Printf("%s%s\n", readyBanner, cluster.BootstrapServers())
	fmt.Printf("controllers: %s (controller.quorum.voters=%s)\n", cluster.ControllerEndpoints(), cluster.ControllerQuorumVoters())
	fmt.Printf("cluster id: %s, Apache Kafka %s, data in %s\n", cluster.ClusterID(), cluster.Kafka(), cluster.Dir())
	if cluster.CAFile() != "" || cluster.SASLMechanism() != nil {
		fmt.Printf("client properties: %s\n", formatClientProperties(cluster.ClientProperties()))
	}
	fmt.Println("Ctrl-C stops the cluster.")
	watchCluster(ctx, cluster)
	fmt.Fprintln(os.Stderr, "kraftd: stopping the cluster")
	cluster.Stop()
	fmt.Fprintln(os.Stderr, "kraftd: cluster stopped")
	return nil
}

func clusterSpec(c *cli.Context) (kit.Spec, error) {
	self, err := os.Executable()
	if err != nil {
		return kit.Spec{}, cli.Exit("cannot find the kraftd binary: "+err.Error(), 1)
	}
	spec := kit.Spec{
		Brokers: c.Int("brokers"), KraftdControllers: c.Int("controllers"), ApacheControllers: c.Int("apache-controllers"),
		Kafka: c.String("kafka"), Dir: c.String("data"), KraftdBinary: self, TLS: c.Bool("tls"), SASL: c.String("sasl"),
		Logf: func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) },
	}
	if spec.Brokers < 1 {
		return spec, cli.Exit("--brokers: want at least 1", 2)
	}
	if spec.KraftdControllers+spec.ApacheControllers < 1 {
		return spec, cli.Exit("--controllers, --apache-controllers: want at least one controller", 2)
	}
	for _, kv := range c.StringSlice("broker-config") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return spec, cli.Exit(fmt.Sprintf("--broker-config %q: want key=value", kv), 2)
		}
		if spec.BrokerConfig == nil {
			spec.BrokerConfig = map[string]string{}
		}
		spec.BrokerConfig[k] = v
	}
	return spec, nil
}

// formatClientProperties is an Apache client's properties on one line,
// sorted, as a user pastes them into a --command-config file.
func formatClientProperties(props map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(props)) {
		kv = append(kv, k+"="+props[k])
	}
	return strings.Join(kv, " ")
}

// watchCluster prints a status line whenever it changes, until ctx is done.
func watchCluster(ctx context.Context, cluster *kit.Cluster) {
	last := ""
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if line := statusLine(cluster.Nodes()); line != last {
			fmt.Printf("%s %s\n", time.Now().Format("15:04:05"), line)
			last = line
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// statusLine counts running nodes by role and names those that are down.
func statusLine(nodes []*kit.Node) string {
	up := map[kit.Role]int{}
	all := map[kit.Role]int{}
	var down []string
	for _, n := range nodes {
		all[n.Role]++
		if n.Running() {
			up[n.Role]++
		} else {
			down = append(down, fmt.Sprint(n.ID))
		}
	}
	line := fmt.Sprintf("brokers %d/%d up, kraftd controllers %d/%d up", up[kit.RoleBroker], all[kit.RoleBroker],
		up[kit.RoleKraftdController], all[kit.RoleKraftdController])
	if all[kit.RoleApacheController] > 0 {
		line += fmt.Sprintf(", Apache controllers %d/%d up", up[kit.RoleApacheController], all[kit.RoleApacheController])
	}
	if len(down) > 0 {
		line += "; down: " + strings.Join(down, ", ")
	}
	return line
}

// detach runs `up` again without --detach in a new session (no terminal, so
// no Ctrl-C or hang-up reaches it), its output in <data>/cluster.log, and
// returns once that run prints the ready banner.
func detach(c *cli.Context) error {
	dir := c.String("data")
	if dir == "" {
		return cli.Exit("--detach needs --data: cluster status and down find the cluster there", 2)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cli.Exit(err.Error(), 1)
	}
	self, err := os.Executable()
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	logPath := filepath.Join(dir, "cluster.log")
	out, err := os.Create(logPath)
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	defer out.Close()
	args := slices.DeleteFunc(slices.Clone(os.Args[1:]), func(a string) bool { return a == "--detach" || a == "-detach" })
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = detachedAttr()
	if err := cmd.Start(); err != nil {
		return cli.Exit(err.Error(), 1)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		if banner := readyLines(logPath); banner != "" {
			fmt.Print(banner)
			fmt.Printf("running in the background (pid %d, log %s); stop it with: kraftd cluster down --data %s\n", cmd.Process.Pid, logPath, dir)
			return nil
		}
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logPath)
			return cli.Exit(fmt.Sprintf("the cluster did not start (%v):\n%s", err, b), 1)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// readyLines returns the lines from the ready banner to the Ctrl-C hint of
// a log, or "" before they are all written.
func readyLines(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, readyBanner) || b.Len() > 0 {
			if strings.HasPrefix(line, "Ctrl-C") {
				return b.String()
			}
			b.WriteString(line + "\n")
		}
	}
	return ""
}

func runClusterStatus(c *cli.Context) error {
	l, err := kit.ReadLayout(c.String("data"))
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	running := supervisorRunning(l.SupervisorPID)
	state := "not running"
	if running {
		state = fmt.Sprintf("running (pid %d)", l.SupervisorPID)
	}
	fmt.Printf("cluster %s, Apache Kafka %s: %s\n", l.ClusterID, l.Kafka, state)
	fmt.Printf("%-5s %-18s %-16s %-8s %s\n", "ID", "ROLE", "ADDRESS", "PID", "STATE")
	var brokers []string
	for _, n := range l.Nodes {
		st := "down"
		if running && n.PID > 0 && processAlive(n.PID) {
			st = "up"
		}
		fmt.Printf("%-5d %-18s 127.0.0.1:%-6d %-8d %s\n", n.ID, n.Role, n.Port, n.PID, st)
		if n.Role == kit.RoleBroker {
			brokers = append(brokers, fmt.Sprintf("127.0.0.1:%d", n.Port))
		}
	}
	fmt.Printf("%s%s\n", readyBanner, strings.Join(brokers, ","))
	if !running {
		return cli.Exit("", 3)
	}
	return nil
}

// supervisorRunning reports whether pid is a `kraftd cluster up` still
// running: the PID of one that ended may belong to another program by now.
func supervisorRunning(pid int) bool {
	if pid <= 0 {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(string(cmdline), "\x00")
	return slices.Contains(args, "cluster") && slices.Contains(args, "up")
}

func runClusterDown(c *cli.Context) error {
	dir := c.String("data")
	l, err := kit.ReadLayout(dir)
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	if !supervisorRunning(l.SupervisorPID) {
		fmt.Println("the cluster in", dir, "is not running")
		return nil
	}
	if err := terminate(l.SupervisorPID); err != nil {
		return cli.Exit(err.Error(), 1)
	}
	// The run stops brokers gracefully (up to 30 s each, at once), then the
	// controllers: wait for more than both.
	deadline := time.Now().Add(2 * time.Minute)
	for supervisorRunning(l.SupervisorPID) {
		if time.Now().After(deadline) {
			return cli.Exit(fmt.Sprintf("the cluster (pid %d) is still stopping after 2 minutes", l.SupervisorPID), 1)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Println("cluster stopped; its data stays in", dir)
	return nil
}
