// Smoke test of the stock Go client (github.com/apache/pulsar-client-go) against a
// Pulsar-protocol server. Usage: go-smoke SERVICE_URL TOPIC N
// Produces N messages (half batched, half not), consumes and acks them with a
// durable subscription checking content and order, then reads them all with a
// reader from earliest. Last line of stdout: "RESULT OK ..." or "RESULT FAIL ...";
// exit status 0 only on OK.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/sirupsen/logrus"
)

func fail(format string, args ...any) {
	fmt.Printf("RESULT FAIL "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 4 {
		fail("usage: go-smoke SERVICE_URL TOPIC N")
	}
	url, topic := os.Args[1], os.Args[2]
	n, err := strconv.Atoi(os.Args[3])
	if err != nil {
		fail("bad N: %v", err)
	}
	half := n / 2

	lg := logrus.New()
	lg.SetLevel(logrus.WarnLevel)
	lg.SetOutput(os.Stderr)
	client, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:               url,
		OperationTimeout:  15 * time.Second,
		ConnectionTimeout: 5 * time.Second,
		Logger:            plog.NewLoggerWithLogrus(lg),
	})
	if err != nil {
		fail("client: %v", err)
	}
	defer client.Close()

	consumer, err := client.Subscribe(pulsar.ConsumerOptions{
		Topic:                       topic,
		SubscriptionName:            "go-smoke",
		Type:                        pulsar.Exclusive,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
	})
	if err != nil {
		fail("subscribe: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var ids []pulsar.MessageID
	plain, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		fail("producer: %v", err)
	}
	for i := 0; i < half; i++ {
		id, err := plain.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("go-%d", i))})
		if err != nil {
			fail("send %d: %v", i, err)
		}
		ids = append(ids, id)
	}
	plain.Close()

	batched, err := client.CreateProducer(pulsar.ProducerOptions{
		Topic:                   topic,
		BatchingMaxMessages:     50,
		BatchingMaxPublishDelay: 20 * time.Millisecond,
	})
	if err != nil {
		fail("batched producer: %v", err)
	}
	type res struct {
		i   int
		id  pulsar.MessageID
		err error
	}
	results := make(chan res, n)
	for i := half; i < n; i++ {
		i := i
		batched.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("go-%d", i))},
			func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { results <- res{i, id, err} })
	}
	if err := batched.Flush(); err != nil {
		fail("flush: %v", err)
	}
	got := make([]pulsar.MessageID, n)
	for k := half; k < n; k++ {
		select {
		case r := <-results:
			if r.err != nil {
				fail("async send %d: %v", r.i, r.err)
			}
			got[r.i] = r.id
		case <-ctx.Done():
			fail("async sends: timeout")
		}
	}
	ids = append(ids, got[half:]...)
	batched.Close()
	for i := 1; i < len(ids); i++ {
		a, b := ids[i-1], ids[i]
		ka := [3]int64{a.LedgerID(), a.EntryID(), int64(a.BatchIdx())}
		kb := [3]int64{b.LedgerID(), b.EntryID(), int64(b.BatchIdx())}
		if !(kb[0] > ka[0] || (kb[0] == ka[0] && (kb[1] > ka[1] || (kb[1] == ka[1] && kb[2] > ka[2])))) {
			fail("message ids not increasing at %d: %v then %v", i, a, b)
		}
	}

	for i := 0; i < n; i++ {
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		m, err := consumer.Receive(rctx)
		rcancel()
		if err != nil {
			fail("consumer: after %d of %d messages: %v", i, n, err)
		}
		if s := string(m.Payload()); s != fmt.Sprintf("go-%d", i) {
			fail("consumer: message %d is '%s'", i, s)
		}
		if err := consumer.Ack(m); err != nil {
			fail("ack %d: %v", i, err)
		}
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	if m, err := consumer.Receive(rctx); err == nil {
		fail("consumer: unexpected extra message '%s'", string(m.Payload()))
	}
	rcancel()
	consumer.Close()

	reader, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		fail("reader: %v", err)
	}
	read := 0
	for read < n {
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		m, err := reader.Next(rctx)
		rcancel()
		if err != nil {
			fail("reader: after %d of %d messages: %v", read, n, err)
		}
		if s := string(m.Payload()); s != fmt.Sprintf("go-%d", read) {
			fail("reader: message %d is '%s'", read, s)
		}
		read++
	}
	if reader.HasNext() {
		fail("reader: HasNext true after reading all")
	}
	reader.Close()
	fmt.Printf("RESULT OK produced=%d consumed=%d read=%d\n", n, n, read)
}
