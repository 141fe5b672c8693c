package queue
const permMinK = 3
