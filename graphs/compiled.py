"""The schedule's per-edge passes compiled with numba: the 1DF numbering and the greedy 1df / bf
simulation of `graphs.schedule` (§6.3, eqs. 3-5, 8-9), over the cost graph's typed arrays.

Each function here is the Python pass of `graphs.schedule` written again over numpy arrays, with
the same visits in the same order: the same tie-breaking (the ready keys, the free processors and
the events (end, processor, edge) are all distinct, so any heap pops them in the one order
`heapq` does) and the same additions. The clock is a double, with a flag for whether Python would
hold it as an int (an int plus an int); `graphs.schedule` takes this route only where that is
exact (`compiled_fits`: every weight a float, or an int whose sum over all edges is below 2^53),
and only for graphs large enough that loading the compiled code (about 0.3 s and 100 MiB: numba
and LLVM) pays. Compiled code is cached on disk (`cache=True`, in `__pycache__` beside this file
or numba's user-wide cache): the first run of a fresh checkout compiles it (tens of seconds).

This module imports numba; only `graphs.schedule` imports it, lazily, as pyopencl and
matplotlib are imported only where used.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Columns of the space trace the simulation returns: (step index, instant, CPU words, GPU words).
_TRACE_COLUMNS = 4


@njit(cache=True, nogil=True)
def depth_first_numbers(order, start, in_degree, target, source, numbers,
                        in_order):  # pragma: no cover - compiled
    """`graphs.schedule._depth_first`'s numbering: each edge's position in the sequential
    depth-first order into `numbers` (left at -1 for an edge the source does not reach) and the
    edges in that order into `in_order`; returns how many were numbered. The in-degrees are
    counted down in place (a copy would cost 4 bytes a node) and counted again at the end."""
    remaining = in_degree
    stack = np.empty(target.shape[0] + 1, dtype=np.int32)  # see `simulate_by_priority`
    top = 0
    for j in range(start[source + 1] - 1, start[source] - 1, -1):
        stack[top] = order[j]
        top += 1
    count = 0
    while top:
        top -= 1
        edge = stack[top]
        while True:
            numbers[edge] = count
            in_order[count] = edge
            count += 1
            node = target[edge]
            remaining[node] -= 1
            if remaining[node]:
                break
            first, last = start[node], start[node + 1]
            if last - first != 1:
                for j in range(last - 1, first - 1, -1):
                    stack[top] = order[j]
                    top += 1
                break
            edge = order[first]  # a node of one out-edge goes on to it at once
    _count_in_edges(target, in_degree)
    return count


@njit(cache=True, nogil=True)
def _count_in_edges(target, in_degree):  # pragma: no cover - compiled
    """in_degree[u] = the number of edges into u (what the passes counted down)."""
    in_degree[:] = 0
    for edge in range(target.shape[0]):
        in_degree[target[edge]] += 1


def warm_up() -> None:
    """Call a compiled function once, which loads numba's registries (see
    `graphs.schedule._compiled_passes`)."""
    _count_in_edges(np.zeros(1, dtype=np.int32), np.zeros(1, dtype=np.int32))


@njit(cache=True, nogil=True, inline="always")
def _box_change(box, end, state, box_changes, box_has, record, trace, traced, step_count,
                at):  # pragma: no cover - compiled
    """`_Simulation.change_space` of a device-box edge (row `box` of the box tables), on the
    simulation's state [CPU words, GPU words, the three peaks, the last traced CPU and GPU
    words]: returns the trace's new length."""
    if not box_has[box, end]:
        return traced
    state[0] += box_changes[box, end, 0]
    state[1] += box_changes[box, end, 1]
    if end:
        cpu, gpu = state[0], state[1]
        _note_peaks(state, cpu, gpu)
        if record:
            traced = _trace_space(state, cpu, gpu, trace, traced, step_count, at)
    return traced


@njit(cache=True, nogil=True, inline="always")
def _note_peaks(state, cpu, gpu):  # pragma: no cover - compiled
    """The simulation's three peaks (state[2:5]: CPU, GPU, both) after `cpu` and `gpu` words."""
    if cpu > state[2]:
        state[2] = cpu
    if gpu > state[3]:
        state[3] = gpu
    if cpu + gpu > state[4]:
        state[4] = cpu + gpu


@njit(cache=True, nogil=True, inline="always")
def _trace_space(state, cpu, gpu, trace, traced, step_count, at):  # pragma: no cover - compiled
    """The space trace's row at instant `at` where the words changed since its last row
    (state[5:7]): returns the trace's new length."""
    if cpu != state[5] or gpu != state[6]:
        state[5], state[6] = cpu, gpu
        trace[traced, 0] = max(0, step_count - 1)
        trace[traced, 1] = at
        trace[traced, 2] = cpu
        trace[traced, 3] = gpu
        traced += 1
    return traced


@njit(cache=True, nogil=True, inline="always")
def _box_of(box_edges, edge):  # pragma: no cover - compiled
    """The row of `edge` in the sorted `box_edges`, or -1 where it is no device-box edge."""
    low, high = 0, box_edges.shape[0]
    while low < high:
        middle = (low + high) >> 1
        if box_edges[middle] < edge:
            low = middle + 1
        else:
            high = middle
    if low < box_edges.shape[0] and box_edges[low] == edge:
        return low
    return -1


@njit(cache=True, nogil=True, inline="always")
def _push_ready(heap, size, key):  # pragma: no cover - compiled
    """heapq.heappush of `key` onto heap[:size]; returns the new size."""
    position = size
    while position:
        parent = (position - 1) >> 1
        if heap[parent] <= key:
            break
        heap[position] = heap[parent]
        position = parent
    heap[position] = key
    return size + 1


@njit(cache=True, nogil=True, inline="always")
def _pop_ready(heap, size):  # pragma: no cover - compiled
    """The least key of heap[:size], taken off it (the size is then size - 1)."""
    least = heap[0]
    size -= 1
    last = heap[size]
    position = 0
    while True:
        child = 2 * position + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if last <= heap[child]:
            break
        heap[position] = heap[child]
        position = child
    if size:
        heap[position] = last
    return least


@njit(cache=True, nogil=True, inline="always")
def _event_less(ends, processors, a, b):  # pragma: no cover - compiled
    """Whether event a comes before event b: by end, then processor (their edges never tie)."""
    if ends[a] != ends[b]:
        return ends[a] < ends[b]
    return processors[a] < processors[b]


@njit(cache=True, nogil=True, inline="always")
def _swap_events(ends, ints, processors, edges, a, b):  # pragma: no cover - compiled
    """Swap events a and b of the heap's four arrays."""
    ends[a], ends[b] = ends[b], ends[a]
    ints[a], ints[b] = ints[b], ints[a]
    processors[a], processors[b] = processors[b], processors[a]
    edges[a], edges[b] = edges[b], edges[a]


@njit(cache=True, nogil=True, inline="always")
def _push_event(ends, ints, processors, edges, size, end, is_int, processor,
                edge):  # pragma: no cover - compiled
    """heapq.heappush of the event (end, processor, edge) (`is_int`: whether Python holds its end
    as an int) onto the heap of size `size`."""
    position = size
    ends[position], ints[position], processors[position], edges[position] = (
        end, is_int, processor, edge)
    while position:
        parent = (position - 1) >> 1
        if not _event_less(ends, processors, position, parent):
            break
        _swap_events(ends, ints, processors, edges, position, parent)
        position = parent
    return size + 1


@njit(cache=True, nogil=True, inline="always")
def _pop_event(ends, ints, processors, edges, size):  # pragma: no cover - compiled
    """Take the least event off the heap of size `size` (then size - 1): its processor and
    edge."""
    processor, edge = processors[0], edges[0]
    size -= 1
    ends[0], ints[0] = ends[size], ints[size]
    processors[0], edges[0] = processors[size], edges[size]
    position = 0
    while True:
        child = 2 * position + 1
        if child >= size:
            break
        if child + 1 < size and _event_less(ends, processors, child + 1, child):
            child += 1
        if not _event_less(ends, processors, child, position):
            break
        _swap_events(ends, ints, processors, edges, position, child)
        position = child
    return processor, edge


@njit(cache=True, nogil=True)
def simulate_by_priority(order, start, in_degree, target, weight_codes, weight_values,
                         weight_ints, node_space, space_table, box_edges, box_changes, box_has,
                         numbers, by_number, source, tasks, procs, breadth_first, record,
                         keep_steps):  # pragma: no cover - compiled
    """`graphs.schedule._Simulation._run_by_priority`, step for step (see there and this
    module's docstring). Edge e weighs weight_values[weight_codes[e]], an int in Python where
    weight_ints says so; node u changes space by space_table[node_space[u]]; the device-box
    edges are the sorted `box_edges`, and box_changes[b, end] their space_start (end 0) and
    space_end (end 1), where box_has says they have one. `tasks` is how many edges weigh more
    than 0.

    Returns (the time of the last step, whether it is an int, the CPU, GPU and total space
    peaks, the step count, the instants' times and int flags, the tasks (processor p's started
    instants and edges are task_instants and task_edges[bounds[p]:bounds[p + 1]], in the order
    they started), the space trace as rows (step, instant, CPU, GPU),
    and, with `keep_steps`, each step's instant, CPU and GPU words and busy processors and the
    nodes it reached (`step_nodes[step_starts[i]:step_starts[i + 1]]`)."""
    count = numbers.shape[0]
    remaining = in_degree  # counted down in place, and again at the end
    # Every array is made as long as it could ever need to be, never grown: an array variable
    # assigned in the loop costs the loop a third of its time in reference counts, and the
    # pages that the loop never touches cost no memory.
    ready = np.empty(max(tasks, 1), dtype=np.int64)
    readies = 0
    free = np.arange(procs).astype(np.int64)  # sorted: a heap
    frees = procs
    event_ends = np.empty(procs, dtype=np.float64)
    event_ints = np.empty(procs, dtype=np.bool_)
    event_processors = np.empty(procs, dtype=np.int64)
    event_edges = np.empty(procs, dtype=np.int64)
    events = 0
    stack = np.empty(count + 1, dtype=np.int32)
    # [CPU words, GPU words, CPU peak, GPU peak, total peak, traced CPU words, traced GPU words]
    state = np.zeros(7, dtype=np.int64)
    instants = tasks + 1 if record else 1
    times = np.empty(instants, dtype=np.float64)
    time_ints = np.empty(instants, dtype=np.bool_)
    task_rows = np.empty((tasks if record else 0, 3), dtype=np.int32)
    started = 0
    # An entry at the end of each instant and of each device box
    trace = np.empty((instants + box_edges.shape[0] if record else 0, _TRACE_COLUMNS),
                     dtype=np.int64)
    traced = 0
    steps = instants if keep_steps else 0
    step_rows = np.empty((steps, 4), dtype=np.int64)  # instant, CPU, GPU words, busy
    step_nodes = np.empty(start.shape[0] - 1 if keep_steps else 0, dtype=np.int32)
    step_starts = np.zeros(steps + 1, dtype=np.int64)
    nodes_kept = 0
    reached = False  # whether the instant reached some node (a step)
    step_count = 0
    stepped_at = 0.0
    stepped_int = True
    time = 0.0
    time_int = True
    at = 0
    times[0] = time
    time_ints[0] = time_int
    instant = 0
    base = 0
    busy = 0
    first_node = source
    has_boxes = box_edges.shape[0] > 0
    while True:
        while True:
            if first_node >= 0:
                node = first_node
                first_node = -1
            else:
                if events == 0 or event_ends[0] != time:
                    break
                processor, edge = _pop_event(event_ends, event_ints, event_processors,
                                             event_edges, events)
                events -= 1
                busy -= 1
                frees = _push_ready(free, frees, processor)
                if has_boxes:
                    box = _box_of(box_edges, edge)
                    if box >= 0:
                        traced = _box_change(box, 1, state, box_changes, box_has, record,
                                                    trace, traced, step_count, at)
                node = target[edge]
                remaining[node] -= 1
                if remaining[node]:
                    continue
            # `reach`: the node and what its weight-0 edges reach at once.
            reached = True
            if keep_steps:
                step_nodes[nodes_kept] = node
                nodes_kept += 1
            change = node_space[node]
            if change:
                state[0] += space_table[change, 0]
                state[1] += space_table[change, 1]
            top = 0
            for j in range(start[node + 1] - 1, start[node] - 1, -1):
                stack[top] = order[j]
                top += 1
            while top:
                top -= 1
                edge = stack[top]
                if weight_values[weight_codes[edge]] > 0:
                    readies = _push_ready(ready, readies, base + numbers[edge])
                    continue
                if has_boxes:
                    box = _box_of(box_edges, edge)
                    if box >= 0:
                        traced = _box_change(box, 0, state, box_changes, box_has, record,
                                                    trace, traced, step_count, at)
                        traced = _box_change(box, 1, state, box_changes, box_has, record,
                                                    trace, traced, step_count, at)
                node = target[edge]
                remaining[node] -= 1
                if remaining[node] == 0:
                    if keep_steps:
                        step_nodes[nodes_kept] = node
                        nodes_kept += 1
                    change = node_space[node]
                    if change:
                        state[0] += space_table[change, 0]
                        state[1] += space_table[change, 1]
                    for j in range(start[node + 1] - 1, start[node] - 1, -1):
                        stack[top] = order[j]
                        top += 1
        # Give every free processor a ready task, while there are any (greedy).
        while readies and frees:
            processor = _pop_ready(free, frees)
            frees -= 1
            edge = by_number[_pop_ready(ready, readies) % count]
            readies -= 1
            if has_boxes:
                box = _box_of(box_edges, edge)
                if box >= 0:
                    traced = _box_change(box, 0, state, box_changes, box_has, record,
                                                trace, traced, step_count, at)
            code = weight_codes[edge]
            events = _push_event(event_ends, event_ints, event_processors, event_edges, events,
                                 time + weight_values[code], time_int and weight_ints[code],
                                 processor, edge)
            busy += 1
            if record:
                task_rows[started, 0] = processor
                task_rows[started, 1] = at
                task_rows[started, 2] = edge
                started += 1
        # Close the instant: sample space and, if some node was reached, count the step.
        cpu, gpu = state[0], state[1]
        _note_peaks(state, cpu, gpu)
        if reached:
            if keep_steps:
                step_rows[step_count, 0] = at
                step_rows[step_count, 1] = cpu
                step_rows[step_count, 2] = gpu
                step_rows[step_count, 3] = busy
                step_starts[step_count + 1] = nodes_kept
            step_count += 1
            stepped_at = time
            stepped_int = time_int
            reached = False
        if record:
            traced = _trace_space(state, cpu, gpu, trace, traced, step_count, at)
        if events == 0:
            break
        time = event_ends[0]
        time_int = event_ints[0]
        if record:
            at += 1
            times[at] = time
            time_ints[at] = time_int
        instant += 1
        if breadth_first:
            base = instant * count
    _count_in_edges(target, in_degree)
    # Each processor's tasks, in the order they started: instants and edges, by processor.
    bounds = np.zeros(procs + 1, dtype=np.int64)
    for task in range(started):
        bounds[task_rows[task, 0] + 1] += 1
    for processor in range(procs):
        bounds[processor + 1] += bounds[processor]
    placed = bounds[:-1].copy()
    task_instants = np.empty(started, dtype=np.int32)
    task_edges = np.empty(started, dtype=np.int32)
    for task in range(started):
        processor = task_rows[task, 0]
        task_instants[placed[processor]] = task_rows[task, 1]
        task_edges[placed[processor]] = task_rows[task, 2]
        placed[processor] += 1
    return (stepped_at, stepped_int, state[2], state[3], state[4], step_count,
            times[:at + 1], time_ints[:at + 1], bounds, task_instants, task_edges,
            trace[:traced], step_rows[:step_count], step_starts[:step_count + 1],
            step_nodes[:nodes_kept])


@njit(cache=True, nogil=True)
def longest_path(order, start, in_degree, target, weight_codes, weight_values, weight_ints,
                 best_edge, with_best_edges):  # pragma: no cover - compiled
    """`graphs.costgraph._longest_path` where its lengths are doubles, visit for visit: Kahn's
    order (first in, first out, from the in-degree-0 nodes in node order), each node's best
    length and whether Python would hold it as an int, and with `with_best_edges` its best
    in-edge into `best_edge`. The in-degrees are counted down in place and counted again at the
    end. Returns (the length, whether it is an int, the first node a longest path reaches)."""
    count = start.shape[0] - 1
    queue = np.empty(count, dtype=np.int32)
    queued = 0
    for node in range(count):
        if in_degree[node] == 0:
            queue[queued] = node
            queued += 1
    end = queue[0] if queued else -1
    best = np.full(count, -1.0)  # -1: not reached (lengths are >= 0)
    whole = np.zeros(count, dtype=np.bool_)
    result = 0.0
    result_whole = False
    visited = 0
    while visited < queued:
        node = queue[visited]
        visited += 1
        here = best[node]
        if here < 0:
            here = 0.0
            here_whole = True
        else:
            here_whole = whole[node]
        if here > result:
            result = here
            result_whole = here_whole
            end = node
        for position in range(start[node], start[node + 1]):
            edge = order[position]
            child = target[edge]
            code = weight_codes[edge]
            candidate = here + weight_values[code]
            known = best[child]
            if candidate > known:
                best[child] = candidate
                whole[child] = here_whole and weight_ints[code]
                if with_best_edges:
                    best_edge[child] = edge
            elif with_best_edges and candidate == known and edge < best_edge[child]:
                best_edge[child] = edge
            in_degree[child] -= 1
            if in_degree[child] == 0:
                queue[queued] = child
                queued += 1
    _count_in_edges(target, in_degree)
    return result, result_whole, end


@njit(cache=True, nogil=True)
def coarsen(firsts, lasts, labels, instants, edges, codes, times, weights, label_names,
            label_kinds, window, across_gaps, name_count):  # pragma: no cover - compiled
    """`graphs.timeline._coarsen` over one processor's runs of tasks: run r is its tasks
    firsts[r] to lasts[r] (`instants`, `edges`: the processor's `Tasks`), under label
    labels[r], whose name and kind numbers are label_names and label_kinds (name -1: a device
    box); the times and the weights by code (`codes`: the edges' weight codes) as doubles,
    exact (`graphs.timeline._in_doubles`). Returns, for each interval it makes, its first and
    last run, its tasks, whether its kinds are mixed, the number of its main name (the first of
    those with the largest total time, as `max` over the dict picks it) and how many names it
    has, and whether it is a device box's run (kept as it is)."""
    count = firsts.shape[0]
    # As long as they could need to be: the pages past the intervals made are never touched.
    first = np.empty(count, dtype=np.int64)
    last = np.empty(count, dtype=np.int64)
    total = np.empty(count, dtype=np.int64)
    mixed = np.zeros(count, dtype=np.bool_)
    main = np.empty(count, dtype=np.int32)
    distinct = np.zeros(count, dtype=np.int32)
    box = np.zeros(count, dtype=np.bool_)
    weights_by_name = np.zeros(name_count, dtype=np.float64)
    seen = np.zeros(name_count, dtype=np.bool_)
    named = np.empty(name_count, dtype=np.int32)  # the open interval's names, as first seen
    kept = 0
    made = 0
    open_interval = False
    bucket = 0.0
    end = 0.0
    opening_kind = 0
    for run in range(count):
        start = times[instants[firsts[run]]]
        final = lasts[run]
        run_end = times[instants[final]] + weights[codes[edges[final]]]
        name = label_names[labels[run]]
        kind = label_kinds[labels[run]]
        tasks = final - firsts[run] + 1
        if name < 0 or not open_interval or bucket != start // window or not (
                across_gaps or end == start):
            if open_interval:  # close it: its main name
                best = weights_by_name[named[0]]
                main[made - 1] = named[0]
                for j in range(1, kept):
                    if weights_by_name[named[j]] > best:
                        best = weights_by_name[named[j]]
                        main[made - 1] = named[j]
                distinct[made - 1] = kept
                for j in range(kept):
                    seen[named[j]] = False
                kept = 0
                open_interval = False
            first[made] = last[made] = run
            total[made] = tasks
            made += 1
            if name < 0:
                box[made - 1] = True
                continue
            open_interval = True
            bucket = start // window
            opening_kind = kind
        else:
            last[made - 1] = run
            total[made - 1] += tasks
            if kind != opening_kind:
                mixed[made - 1] = True
        end = run_end
        if not seen[name]:
            seen[name] = True
            weights_by_name[name] = 0.0
            named[kept] = name
            kept += 1
        weights_by_name[name] += run_end - start
    if open_interval:
        best = weights_by_name[named[0]]
        main[made - 1] = named[0]
        for j in range(1, kept):
            if weights_by_name[named[j]] > best:
                best = weights_by_name[named[j]]
                main[made - 1] = named[j]
        distinct[made - 1] = kept
    return (first[:made], last[:made], total[:made], mixed[:made], main[:made],
            distinct[:made], box[:made])

@njit(cache=True, nogil=True, inline="always")
def _in_sorted(values, value):  # pragma: no cover - compiled
    """Whether `value` is in the sorted array `values`."""
    return _box_of(values, value) >= 0


@njit(cache=True, nogil=True)
def fork_tree(order, start, target, weight_codes, weight_values, node_codes, is_fork,
              span_class, critical_edges, fork, join):  # pragma: no cover - compiled
    """`graphs.picture._Reader.par`'s walk of the balanced tree of binary ⊗ under `fork`, in its
    order (a stack, each fork's out-edges left to right): the inner forks (a fork of the same
    span whose join has an edge to the bottom) are expanded and their fork and join weights
    added to the overhead, as the walk adds them; the rest are the leaves. Node u is a fork
    where is_fork[node_codes[u]], of span class span_class[node_codes[u]] (equal spans, one
    class); `critical_edges` sorted. Returns (the overhead, and for each leaf in order: its
    first node, the join it ends at, the fork and join weights summed above it, whether the
    path to it is critical, the edge into it)."""
    edges = target.shape[0]
    span = span_class[node_codes[fork]]
    # As long as they could need to be, never grown (see `simulate_by_priority`).
    stack_expand = np.empty(edges + 1, dtype=np.bool_)
    stack_top = np.empty(edges + 1, dtype=np.int64)
    stack_bottom = np.empty(edges + 1, dtype=np.int64)
    stack_forks = np.empty(edges + 1, dtype=np.float64)
    stack_joins = np.empty(edges + 1, dtype=np.float64)
    stack_critical = np.empty(edges + 1, dtype=np.bool_)
    stack_edge = np.empty(edges + 1, dtype=np.int64)
    leaf_top = np.empty(edges, dtype=np.int64)
    leaf_bottom = np.empty(edges, dtype=np.int64)
    leaf_forks = np.empty(edges, dtype=np.float64)
    leaf_joins = np.empty(edges, dtype=np.float64)
    leaf_critical = np.empty(edges, dtype=np.bool_)
    leaf_edge = np.empty(edges, dtype=np.int64)
    leaves = 0
    overhead = 0.0
    stack_expand[0], stack_top[0], stack_bottom[0] = True, fork, join
    stack_forks[0], stack_joins[0], stack_critical[0], stack_edge[0] = 0.0, 0.0, True, -1
    size = 1
    while size:
        size -= 1
        top, bottom = stack_top[size], stack_bottom[size]
        fork_sum, join_sum, critical_so_far = (stack_forks[size], stack_joins[size],
                                               stack_critical[size])
        if not stack_expand[size]:
            leaf_top[leaves], leaf_bottom[leaves] = top, bottom
            leaf_forks[leaves], leaf_joins[leaves] = fork_sum, join_sum
            leaf_critical[leaves], leaf_edge[leaves] = critical_so_far, stack_edge[size]
            leaves += 1
            continue
        # The out-edges' entries go on the stack last first, so that the first comes off first.
        first, last = start[top], start[top + 1]
        size += last - first
        slot = size
        for position in range(first, last):
            slot -= 1
            edge = order[position]
            child = target[edge]
            fork_weight = weight_values[weight_codes[edge]]
            critical = critical_so_far and _in_sorted(critical_edges, edge)
            inner_join = child + 1
            join_edge = -1
            if is_fork[node_codes[child]] and span_class[node_codes[child]] == span:
                for inner in range(start[inner_join], start[inner_join + 1]):
                    if target[order[inner]] == bottom:
                        join_edge = order[inner]
                        break
            if join_edge >= 0:
                join_weight = weight_values[weight_codes[join_edge]]
                overhead += fork_weight + join_weight
                stack_expand[slot], stack_top[slot], stack_bottom[slot] = True, child, inner_join
                stack_forks[slot] = fork_sum + fork_weight
                stack_joins[slot] = join_sum + join_weight
                stack_critical[slot] = critical and _in_sorted(critical_edges, join_edge)
                stack_edge[slot] = -1
            else:
                stack_expand[slot], stack_top[slot], stack_bottom[slot] = False, child, bottom
                stack_forks[slot] = fork_sum + fork_weight
                stack_joins[slot] = join_sum
                stack_critical[slot] = critical
                stack_edge[slot] = edge
    return (overhead, leaf_top[:leaves], leaf_bottom[:leaves], leaf_forks[:leaves],
            leaf_joins[:leaves], leaf_critical[:leaves], leaf_edge[:leaves])


# -- built ahead of time (graphs.passes) ------------------------------------------------------------
BUILT = "hetprof_passes"
"""The name of the module `build` makes."""


def exports() -> list[tuple[str, object, str]]:
    """(name, function, numba signature) of each function the built module exports: one per
    item size of the codes it reads (a cost graph numbers its edge and node records in 1, 2 or
    4 bytes, its nodes' space changes in 1 or 4), named by them (`graphs.passes._Built`
    picks)."""
    numbers = "i4[::1]"
    made: list[tuple[str, object, str]] = [
        ("depth_first_numbers", depth_first_numbers,
         f"i8({numbers}, {numbers}, {numbers}, {numbers}, i8, {numbers}, {numbers})")]
    for codes in ("u1", "u2", "u4"):
        made.append((f"longest_path_{codes}", longest_path,
                     f"Tuple((f8, b1, i8))({numbers}, {numbers}, {numbers}, {numbers}, "
                     f"{codes}[::1], f8[::1], b1[::1], {numbers}, b1)"))
        for spaces in ("u1", "u4"):
            results = ("Tuple((f8, b1, i8, i8, i8, i8, f8[::1], b1[::1], i8[::1], i4[::1], "
                       "i4[::1], i8[:, ::1], i8[:, ::1], i8[::1], i4[::1]))")
            arguments = (f"{numbers}, {numbers}, {numbers}, {numbers}, {codes}[::1], f8[::1], "
                         f"b1[::1], {spaces}[::1], i8[:, ::1], i8[::1], i8[:, :, ::1], "
                         f"b1[:, ::1], {numbers}, {numbers}, i8, i8, i8, b1, b1, b1")
            made.append((f"simulate_by_priority_{codes}_{spaces}", simulate_by_priority,
                         f"{results}({arguments})"))
        for node_codes in ("u1", "u2", "u4"):
            made.append((f"fork_tree_{codes}_{node_codes}", fork_tree,
                         "Tuple((f8, i8[::1], i8[::1], f8[::1], f8[::1], b1[::1], i8[::1]))"
                         f"({numbers}, {numbers}, {numbers}, {codes}[::1], f8[::1], "
                         f"{node_codes}[::1], b1[::1], i4[::1], i8[::1], i8, i8)"))
        made.append((f"coarsen_{codes}", coarsen,
                     "Tuple((i8[::1], i8[::1], i8[::1], b1[::1], i4[::1], i4[::1], b1[::1]))"
                     f"({numbers}, {numbers}, {numbers}, {numbers}, {numbers}, {codes}[::1], "
                     f"f8[::1], f8[::1], {numbers}, {numbers}, f8, b1, i8)"))
    return made


def build(directory: str) -> None:
    """Build the module `BUILT` into `directory` with numba's pycc (a C compiler links it)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pycc is pending deprecation (numba 0.57 on)
        from numba.pycc import CC

        module = CC(BUILT)
        module.output_dir = directory
        for name, function, signature in exports():
            module.export(name, signature)(function.py_func)  # type: ignore[attr-defined]
        module.compile()


if __name__ == "__main__":
    import sys

    build(sys.argv[1])
