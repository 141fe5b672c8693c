package queue
const permMinK = 4
