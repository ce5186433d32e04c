// A kafkajs 2.2.4 transactional producer for the gateway's transaction tests.
// Usage: node txn.js <bootstrap> <topic> <transactional id> <producer name>
// Transactions of 50 values {"producer": name, "seq": n}: [0, 50) committed,
// [50, 100) aborted, [100, 150) committed; then [150, 160) is sent by a
// producer that a second one with the same transactional id fences before
// its commit, and the second commits [160, 170). Prints "C <first> <last>",
// "A <first> <last>", "FENCED <error>" (or "NOT-FENCED") and "D".
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, topic, txnId, name] = process.argv.slice(2);
const kafka = new Kafka({ clientId: 'gateway-txn-test', brokers: [bootstrap], logLevel: logLevel.NOTHING });

const values = (from, to) => {
  const out = [];
  for (let n = from; n < to; n++) out.push({ value: JSON.stringify({ producer: name, seq: n }) });
  return out;
};

async function producer() {
  const p = kafka.producer({ transactionalId: txnId, maxInFlightRequests: 1, idempotent: true, transactionTimeout: 60000 });
  await p.connect();
  return p;
}

async function round(p, from, to, commit) {
  const tx = await p.transaction();
  await tx.send({ topic, messages: values(from, to) });
  if (commit) {
    await tx.commit();
    console.log(`C ${from} ${to - 1}`);
  } else {
    await tx.abort();
    console.log(`A ${from} ${to - 1}`);
  }
}

(async () => {
  const first = await producer();
  await round(first, 0, 50, true);
  await round(first, 50, 100, false);
  await round(first, 100, 150, true);
  const zombie = await first.transaction();
  await zombie.send({ topic, messages: values(150, 160) });
  const second = await producer();
  const successor = await second.transaction();
  try {
    await zombie.commit();
    console.log('NOT-FENCED');
  } catch (e) {
    console.log(`FENCED ${e.type || e.name}`);
  }
  await successor.send({ topic, messages: values(160, 170) });
  await successor.commit();
  console.log('C 160 169');
  await first.disconnect().catch(() => {});
  await second.disconnect();
  console.log('D');
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
