# redamo: a static binary in a distroless image, run as a non-root user.
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t redamo .
#   docker run -p 6379:6379 redamo                       # embedded store
#   docker run -p 6379:6379 -e REDAMO_STORE=dynamodb -e REDAMO_TABLE=redamo \
#     -e AWS_REGION=eu-west-1 redamo                       # DynamoDB
#
# AWS credentials come from the SDK's default chain (environment, web identity
# token, ECS task role, EC2 instance profile). Every flag has a REDAMO_*
# variable; see README.md.

FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# CGO_ENABLED=0: a static binary that needs no libc in the final image.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
	-o /out/redamo ./cmd/redamo

# distroless/static: CA certificates (TLS to DynamoDB), tzdata, /etc/passwd with
# the nonroot user (uid 65532), and nothing else: no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/redamo /usr/local/bin/redamo
USER 65532:65532
# Inside a container the server must listen on all interfaces to be reachable;
# the binary's own default (127.0.0.1) is right for a developer machine.
# Clients reach it through the container network, never from its loopback,
# so protected mode would refuse them all: the network is the boundary here
# (set REDAMO_REQUIREPASS when it is not).
ENV REDAMO_ADDR=0.0.0.0:6379 REDAMO_PROTECTED_MODE=no
EXPOSE 6379
ENTRYPOINT ["/usr/local/bin/redamo"]
