# Multi-stage build of the gateway binary; the runtime image has no shell and runs as non-root.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/gateway ./cmd/gateway

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gateway /usr/local/bin/gateway
COPY configs/gateway.yaml /etc/fluss-gateway/gateway.yaml
USER nonroot:nonroot
EXPOSE 9092 9644
ENTRYPOINT ["/usr/local/bin/gateway"]
CMD ["-config", "/etc/fluss-gateway/gateway.yaml"]
