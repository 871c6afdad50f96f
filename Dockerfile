# Multi-stage build of the Lodestream server. Not exercised in CI (the build
# machines have no Docker engine); kept buildable by hand.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/iggy-server ./cmd/iggy-server

FROM gcr.io/distroless/static-debian12:nonroot
WORKDIR /home/nonroot
COPY --from=build /out/iggy-server /usr/local/bin/iggy-server
COPY config.toml /etc/lodestream/config.toml
ENV IGGY_CONFIG_PATH=/etc/lodestream/config.toml \
    IGGY_SYSTEM_PATH=/home/nonroot/local_data \
    IGGY_TCP_ADDRESS=0.0.0.0:8090 \
    IGGY_HTTP_ADDRESS=0.0.0.0:3000
USER nonroot:nonroot
EXPOSE 8090 3000
VOLUME ["/home/nonroot/local_data"]
ENTRYPOINT ["/usr/local/bin/iggy-server"]
