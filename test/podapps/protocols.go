package podapps

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/tunnelgate/tunnelgate/test/connector"
)

// Protocols is a backend that speaks every protocol a Gateway routes. On
// $PORT (8080), HTTP/1.1: /ws is a WebSocket that echoes every byte,
// /events a server-sent event stream (two events, then open until the
// client goes, at most 30 s), any other path a line of text
// ("protocols PATH"). On $GRPC_PORT (9090), a gRPC server (grpc-go) with
// the standard health service, SERVING.
func Protocols([]string) int {
	port, grpcPort := os.Getenv("PORT"), os.Getenv("GRPC_PORT")
	if port == "" {
		port = "8080"
	}
	if grpcPort == "" {
		grpcPort = "9090"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", wsEcho)
	mux.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := 1; i <= 2; i++ {
			fmt.Fprintf(w, "data: event %d\n\n", i)
			if rc.Flush() != nil {
				return
			}
		}
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "protocols %s", r.URL.Path)
	})
	ln, err := net.Listen("tcp", ":"+grpcPort)
	if err != nil {
		log.Print(err)
		return 1
	}
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	go func() { _ = gs.Serve(ln) }()
	hs := &http.Server{Addr: ":" + port, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		gs.Stop()
		hs.Close()
	}()
	if err := hs.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Print(err)
		return 1
	}
	return 0
}

// wsEcho answers a WebSocket handshake with 101, then echoes every byte
// until the connection ends.
func wsEcho(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Sec-WebSocket-Key")
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || key == "" {
		http.Error(w, "not a WebSocket handshake", http.StatusBadRequest)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		connector.WebSocketAccept(key))
	if brw.Flush() != nil {
		return
	}
	_, _ = io.Copy(conn, brw)
}
