// goclient: a gRPC client built on grpc-go, the library Porch's function
// runner and engine use, so the servers are tested against the client
// implementation that calls them in production and not only against
// python3-grpcio (gRPC C core) and our own runner-client.
//
// It imports the evaluator stubs generated from proto/evaluator.proto under
// the package path Porch's own code imports them from. Every subcommand
// prints one JSON object on stdout; the tests decide what is right.
//
//	goclient eval    -addr A -image IMG -in FILE [-timeout D] [-max-recv N] [-out FILE]
//	goclient load    -addr A -image IMG -in FILE -streams N -calls M [-timeout D]
//	goclient cancel  -addr A -image IMG -in FILE -after D
//	goclient health  -addr A [-service S]
//	goclient watch   -addr A [-service S] [-for D]
//	goclient idle    -addr A -image IMG -in FILE -idle D    (keepalive pings while idle)
//	goclient reflect -addr A
//	goclient metadata -addr A -image IMG -in FILE -sizes N,M...
//	                 (one call without metadata, then one per size with about that many
//	                  bytes of metadata in 8 KB entries, all on one connection at once)
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io/ioutil"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	pb "github.com/nephio-project/porch/func/evaluator"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
)

type opts struct {
	addr, image, tag, in, out, service, sizes string
	timeout, after, idle, watchFor time.Duration
	maxRecv, streams, calls      int
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: goclient eval|load|cancel|health|watch|idle|reflect [flags]")
	}
	cmd := os.Args[1]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	var o opts
	fs.StringVar(&o.addr, "addr", "", "server address")
	fs.StringVar(&o.image, "image", "example/fn:v1", "image in the request")
	fs.StringVar(&o.tag, "tag", "", "Tag in the request (a semver constraint)")
	fs.StringVar(&o.in, "in", "", "ResourceList file")
	fs.StringVar(&o.out, "out", "", "write the answer's resource_list here")
	fs.StringVar(&o.service, "service", "", "health service name")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "deadline of each call")
	fs.DurationVar(&o.after, "after", 200*time.Millisecond, "cancel after this")
	fs.DurationVar(&o.idle, "idle", 12*time.Second, "stay idle this long")
	fs.DurationVar(&o.watchFor, "for", 10*time.Second, "watch this long at most")
	fs.IntVar(&o.maxRecv, "max-recv", 6*1024*1024, "largest answer accepted")
	fs.IntVar(&o.streams, "streams", 8, "concurrent calls")
	fs.IntVar(&o.calls, "calls", 100, "calls in all")
	fs.StringVar(&o.sizes, "sizes", "", "metadata: bytes of metadata of each call, comma-separated")
	fs.Parse(os.Args[2:])

	var out interface{}
	switch cmd {
	case "eval":
		out = evalOnce(o)
	case "load":
		out = load(o)
	case "cancel":
		out = cancel(o)
	case "health":
		out = health(o)
	case "watch":
		out = watch(o)
	case "idle":
		out = idle(o)
	case "reflect":
		out = reflect(o)
	case "metadata":
		out = withMetadata(o)
	default:
		fail("unknown subcommand " + cmd)
	}
	json.NewEncoder(os.Stdout).Encode(out)
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "goclient:", msg)
	os.Exit(2)
}

// dial connects as Porch's runner does: plaintext, blocking until the
// connection is up, with the message limit the caller gives.
func dial(o opts, extra ...grpc.DialOption) *grpc.ClientConn {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dopts := append([]grpc.DialOption{grpc.WithInsecure(), grpc.WithBlock(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(o.maxRecv), grpc.MaxCallSendMsgSize(64<<20))},
		extra...)
	cc, err := grpc.DialContext(ctx, o.addr, dopts...)
	if err != nil {
		fail("dial " + o.addr + ": " + err.Error())
	}
	return cc
}

func readInput(o opts) []byte {
	data, err := ioutil.ReadFile(o.in)
	if err != nil {
		fail(err.Error())
	}
	return data
}

type callResult struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Len       int    `json:"len"`
	SHA256    string `json:"sha256,omitempty"`
	Log       string `json:"log"`
	ElapsedMs int64  `json:"elapsed_ms"`
}

func result(resp *pb.EvaluateFunctionResponse, err error, start time.Time) callResult {
	r := callResult{Code: status.Code(err).String(), ElapsedMs: time.Since(start).Milliseconds()}
	if err != nil {
		r.Message = status.Convert(err).Message()
		return r
	}
	sum := sha256.Sum256(resp.ResourceList)
	r.Len, r.SHA256, r.Log = len(resp.ResourceList), hex.EncodeToString(sum[:]), string(resp.Log)
	return r
}

func evalOnce(o opts) callResult {
	cc := dial(o)
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	start := time.Now()
	resp, err := pb.NewFunctionEvaluatorClient(cc).EvaluateFunction(ctx,
		&pb.EvaluateFunctionRequest{ResourceList: readInput(o), Image: o.image, Tag: o.tag})
	if err == nil && o.out != "" {
		if werr := ioutil.WriteFile(o.out, resp.ResourceList, 0o644); werr != nil {
			fail(werr.Error())
		}
	}
	return result(resp, err, start)
}

// withMetadata: a call without metadata starts first; while it runs, one
// call per size in o.sizes carries that many bytes of metadata (entries of
// 8,000 bytes), all on the same connection. Answers: "plain" and "sized".
func withMetadata(o opts) map[string]interface{} {
	cc := dial(o)
	defer cc.Close()
	client := pb.NewFunctionEvaluatorClient(cc)
	input := readInput(o)
	call := func(md metadata.MD) callResult {
		ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
		defer cancel()
		if md != nil {
			ctx = metadata.NewOutgoingContext(ctx, md)
		}
		start := time.Now()
		resp, err := client.EvaluateFunction(ctx, &pb.EvaluateFunctionRequest{ResourceList: input, Image: o.image})
		return result(resp, err, start)
	}
	var plain callResult
	done := make(chan struct{})
	go func() {
		plain = call(nil)
		close(done)
	}()
	time.Sleep(200 * time.Millisecond) // the plain call is in flight
	var sized []callResult
	for _, s := range strings.Split(o.sizes, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			fail("-sizes: " + err.Error())
		}
		md := metadata.MD{}
		for i := 0; i*8000 < n; i++ {
			md.Set(fmt.Sprintf("x-md-%d", i), strings.Repeat("v", 8000))
		}
		sized = append(sized, call(md))
	}
	<-done
	return map[string]interface{}{"plain": plain, "sized": sized}
}

// load: o.calls calls over one connection, o.streams at a time, as Porch's
// engine renders packages in parallel through one runner connection.
func load(o opts) map[string]interface{} {
	cc := dial(o)
	defer cc.Close()
	client := pb.NewFunctionEvaluatorClient(cc)
	input := readInput(o)
	var mu sync.Mutex
	codesSeen := map[string]int{}
	sums := map[string]int{}
	jobs := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < o.streams; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
				resp, err := client.EvaluateFunction(ctx, &pb.EvaluateFunctionRequest{ResourceList: input, Image: o.image})
				cancel()
				r := result(resp, err, start)
				mu.Lock()
				codesSeen[r.Code]++
				if r.SHA256 != "" {
					sums[r.SHA256]++
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < o.calls; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return map[string]interface{}{"codes": codesSeen, "distinct_answers": len(sums),
		"elapsed_ms": time.Since(start).Milliseconds()}
}

func cancel(o opts) callResult {
	cc := dial(o)
	defer cc.Close()
	ctx, cancelCall := context.WithCancel(context.Background())
	time.AfterFunc(o.after, cancelCall)
	start := time.Now()
	resp, err := pb.NewFunctionEvaluatorClient(cc).EvaluateFunction(ctx,
		&pb.EvaluateFunctionRequest{ResourceList: readInput(o), Image: o.image})
	return result(resp, err, start)
}

func health(o opts) map[string]string {
	cc := dial(o)
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: o.service})
	out := map[string]string{"code": status.Code(err).String()}
	if err != nil {
		out["message"] = status.Convert(err).Message()
	} else {
		out["status"] = resp.Status.String()
	}
	return out
}

// watch prints every status the server sends until the stream ends (a
// drain ends it) or o.watchFor passes; "ready" on stderr once the first
// status arrived, so a test knows when to act.
func watch(o opts) map[string]interface{} {
	cc := dial(o)
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), o.watchFor)
	defer cancel()
	stream, err := healthpb.NewHealthClient(cc).Watch(ctx, &healthpb.HealthCheckRequest{Service: o.service})
	statuses := []string{}
	for err == nil {
		var resp *healthpb.HealthCheckResponse
		resp, err = stream.Recv()
		if err == nil {
			statuses = append(statuses, resp.Status.String())
			if len(statuses) == 1 {
				fmt.Fprintln(os.Stderr, "ready")
			}
		}
	}
	return map[string]interface{}{"statuses": statuses, "code": status.Code(err).String(),
		"message": status.Convert(err).Message()}
}

// idle: a call, o.idle without calls while the client sends keepalive pings
// (grpc-go's smallest client interval, 10 s, as a long-lived runner
// connection would), then a second call on the same connection.
func idle(o opts) map[string]interface{} {
	cc := dial(o, grpc.WithKeepaliveParams(keepalive.ClientParameters{
		Time: 10 * time.Second, Timeout: 5 * time.Second, PermitWithoutStream: true}))
	defer cc.Close()
	client := pb.NewFunctionEvaluatorClient(cc)
	input := readInput(o)
	call := func() callResult {
		ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
		defer cancel()
		start := time.Now()
		resp, err := client.EvaluateFunction(ctx, &pb.EvaluateFunctionRequest{ResourceList: input, Image: o.image})
		return result(resp, err, start)
	}
	first := call()
	time.Sleep(o.idle)
	second := call()
	return map[string]interface{}{"first": first, "second": second, "state": cc.GetState().String()}
}

// reflect lists the services through v1alpha reflection (what grpcurl and
// grpc-go's own tools ask first) and describes the evaluator's file.
func reflect(o opts) map[string]interface{} {
	cc := dial(o)
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	stream, err := reflectpb.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	if err != nil {
		fail(err.Error())
	}
	ask := func(req *reflectpb.ServerReflectionRequest) *reflectpb.ServerReflectionResponse {
		if err := stream.Send(req); err != nil {
			fail("send: " + err.Error())
		}
		resp, err := stream.Recv()
		if err != nil {
			fail("recv: " + err.Error())
		}
		return resp
	}
	services := []string{}
	list := ask(&reflectpb.ServerReflectionRequest{
		MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{ListServices: "*"}})
	for _, s := range list.GetListServicesResponse().GetService() {
		services = append(services, s.Name)
	}
	sort.Strings(services)
	file := ask(&reflectpb.ServerReflectionRequest{
		MessageRequest: &reflectpb.ServerReflectionRequest_FileContainingSymbol{
			FileContainingSymbol: "evaluator.FunctionEvaluator"}})
	missing := ask(&reflectpb.ServerReflectionRequest{
		MessageRequest: &reflectpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: "no.such.Symbol"}})
	stream.CloseSend()
	return map[string]interface{}{"services": services,
		"evaluator_files": len(file.GetFileDescriptorResponse().GetFileDescriptorProto()),
		"missing_code": codes.Code(missing.GetErrorResponse().GetErrorCode()).String()}
}
