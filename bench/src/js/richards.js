// An object-heavy kernel in the style of Richards: an operating-system scheduler simulation with
// task control blocks, packets in linked queues, classes, method calls and polymorphic dispatch.
// Written for this suite; deterministic, so native and sandboxed runs must give the same counts.
"use strict";

const IDLE = 0, WORKER = 1, HANDLER_A = 2, HANDLER_B = 3, DEVICE_A = 4, DEVICE_B = 5;
const TASKS = 6;
const KIND_DEVICE = 0, KIND_WORK = 1;
const DATA_SIZE = 4;

class Packet {
  constructor(link, owner, kind) {
    this.link = link;
    this.owner = owner;
    this.kind = kind;
    this.count = 0;
    this.data = new Array(DATA_SIZE).fill(0);
  }
  /** Appends this packet at the end of `queue` and returns the new head. */
  appendTo(queue) {
    this.link = null;
    if (queue === null) return this;
    let p = queue;
    while (p.link !== null) p = p.link;
    p.link = this;
    return queue;
  }
}

class Task {
  constructor(scheduler, id, priority, queue, behaviour) {
    this.scheduler = scheduler;
    this.id = id;
    this.priority = priority;
    this.queue = queue;
    this.behaviour = behaviour;
    this.waiting = false;
    this.held = false;
    this.next = null;
  }
  get runnable() {
    return !this.held && (!this.waiting || this.queue !== null);
  }
  /** Takes the first queued packet (or null) and runs the task's behaviour on it. */
  run() {
    let packet = null;
    if (this.waiting && this.queue !== null) {
      packet = this.queue;
      this.queue = packet.link;
      this.waiting = false;
    }
    return this.behaviour.step(this, packet);
  }
  /** A packet arrives; returns the task that should run next. */
  receive(packet, current) {
    if (this.queue === null) {
      this.queue = packet;
      packet.link = null;
      return this.priority > current.priority && !this.held ? this : current;
    }
    this.queue = packet.appendTo(this.queue);
    return current;
  }
}

class Idle {
  constructor(seed, count) { this.seed = seed; this.count = count; }
  step(task, _packet) {
    const s = task.scheduler;
    if (--this.count === 0) return s.holdCurrent();
    if ((this.seed & 1) === 0) {
      this.seed >>= 1;
      return s.release(DEVICE_A);
    }
    this.seed = (this.seed >> 1) ^ 0xd008;
    return s.release(DEVICE_B);
  }
}

class Worker {
  constructor() { this.destination = HANDLER_A; this.letter = 0; }
  step(task, packet) {
    const s = task.scheduler;
    if (packet === null) return s.wait();
    this.destination = this.destination === HANDLER_A ? HANDLER_B : HANDLER_A;
    packet.owner = this.destination;
    packet.count = 0;
    for (let i = 0; i < DATA_SIZE; i++) {
      this.letter = this.letter === 26 ? 1 : this.letter + 1;
      packet.data[i] = this.letter;
    }
    return s.send(packet);
  }
}

class Handler {
  constructor() { this.work = null; this.devices = null; }
  step(task, packet) {
    const s = task.scheduler;
    if (packet !== null) {
      if (packet.kind === KIND_WORK) this.work = packet.appendTo(this.work);
      else this.devices = packet.appendTo(this.devices);
    }
    if (this.work !== null) {
      const work = this.work;
      if (work.count < DATA_SIZE) {
        if (this.devices !== null) {
          const device = this.devices;
          this.devices = device.link;
          device.count = work.data[work.count++];
          return s.send(device);
        }
      } else {
        this.work = work.link;
        return s.send(work);
      }
    }
    return s.wait();
  }
}

class Device {
  constructor() { this.pending = null; }
  step(task, packet) {
    const s = task.scheduler;
    if (packet === null) {
      if (this.pending === null) return s.wait();
      const p = this.pending;
      this.pending = null;
      return s.send(p);
    }
    this.pending = packet;
    return s.holdCurrent();
  }
}

class Scheduler {
  constructor() {
    this.tasks = new Array(TASKS).fill(null);
    this.list = null;
    this.current = null;
    this.sent = 0;
    this.holds = 0;
  }
  add(id, priority, queue, behaviour) {
    const task = new Task(this, id, priority, queue, behaviour);
    // Keep the list ordered by priority, highest first.
    if (this.list === null || priority > this.list.priority) {
      task.next = this.list;
      this.list = task;
    } else {
      let t = this.list;
      while (t.next !== null && t.next.priority >= priority) t = t.next;
      task.next = t.next;
      t.next = task;
    }
    this.tasks[id] = task;
  }
  run() {
    this.current = this.list;
    while (this.current !== null) {
      this.current = this.current.runnable ? this.current.run() : this.current.next;
    }
  }
  wait() {
    this.current.waiting = true;
    return this.current;
  }
  holdCurrent() {
    this.holds++;
    this.current.held = true;
    return this.current.next;
  }
  release(id) {
    const task = this.tasks[id];
    task.held = false;
    return task.priority > this.current.priority ? task : this.current;
  }
  send(packet) {
    const target = this.tasks[packet.owner];
    this.sent++;
    packet.owner = this.current.id;
    return target.receive(packet, this.current);
  }
}

function richards(rounds) {
  const s = new Scheduler();
  s.add(IDLE, 0, null, new Idle(1, rounds));
  let work = new Packet(null, WORKER, KIND_WORK);
  work = new Packet(work, WORKER, KIND_WORK);
  s.add(WORKER, 1000, work, new Worker());
  let a = new Packet(null, DEVICE_A, KIND_DEVICE);
  a = new Packet(a, DEVICE_A, KIND_DEVICE);
  a = new Packet(a, DEVICE_A, KIND_DEVICE);
  s.add(HANDLER_A, 2000, a, new Handler());
  let b = new Packet(null, DEVICE_B, KIND_DEVICE);
  b = new Packet(b, DEVICE_B, KIND_DEVICE);
  b = new Packet(b, DEVICE_B, KIND_DEVICE);
  s.add(HANDLER_B, 3000, b, new Handler());
  s.add(DEVICE_A, 4000, null, new Device());
  s.add(DEVICE_B, 5000, null, new Device());
  s.run();
  return [s.sent, s.holds];
}

const results = [];
for (let i = 0; i < 10; i++) results.push(richards(10000));
results
