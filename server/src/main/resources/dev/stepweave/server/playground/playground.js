// The Stepweave playground: the public HTTP API the SDKs use, called from this page (same origin).
// EventSource cannot send an Authorization header, so event streams are read with fetch.
'use strict';

const KEY = 'stepweave.apiKey';
const $ = (id) => document.getElementById(id);

let model = null;        // the served model object of GET /v1/models
let following = null;    // {id, controller} of the job whose stream is open
let resultUrl = null;    // an object URL of the shown video, when it had to be fetched with a key

function key() {
  return sessionStorage.getItem(KEY);
}

function headers(extra) {
  const h = Object.assign({}, extra);
  if (key()) h.Authorization = 'Bearer ' + key();
  return h;
}

/** An API error as the server sends it: OpenAI's {"error": {message, type, param, code}}. */
class ApiError extends Error {
  constructor(status, error) {
    super(error.message);
    this.status = status;
    this.param = error.param;
    this.code = error.code;
  }
}

async function failure(res) {
  let error = {message: res.status + ' ' + res.statusText, param: null, code: null};
  try {
    const body = await res.json();
    if (body && body.error) error = body.error;
  } catch (e) { /* not JSON: keep the status line */ }
  return new ApiError(res.status, error);
}

async function api(path, init) {
  const res = await fetch(path, Object.assign({}, init, {headers: headers(init && init.headers)}));
  if (!res.ok) throw await failure(res);
  return res.json();
}

function showError(e) {
  document.querySelectorAll('.invalid').forEach((el) => el.classList.remove('invalid'));
  const box = $('error');
  if (!e) {
    box.hidden = true;
    box.textContent = '';
    return;
  }
  if (e.status === 401) {
    askForKey(e.message);
    return;
  }
  box.textContent = e.message + (e.param ? ' (' + e.param + ')' : '') + (e.code ? ' [' + e.code + ']' : '');
  box.dataset.code = e.code || '';
  box.dataset.param = e.param || '';
  box.hidden = false;
  const field = e.param && fieldOf(e.param);
  if (field) {
    field.classList.add('invalid');
    field.focus();
  }
}

/** The form control an error's param names ("seconds" and "num_frames" share one input). */
function fieldOf(param) {
  if (param === 'seconds' || param === 'num_frames') return $('length');
  if (param.startsWith('cache')) return $('caches-field');
  if (param.startsWith('lora')) return $('loras-field');
  return document.querySelector('#create [name="' + CSS.escape(param) + '"]');
}

function askForKey(message) {
  $('app').hidden = true;
  $('key-panel').hidden = false;
  const err = $('key-error');
  err.hidden = !message;
  err.textContent = message || '';
  $('api-key').focus();
}

async function start() {
  try {
    const list = await api('/v1/models');
    model = list.data[0];
  } catch (e) {
    if (e.status === 401) {
      askForKey(key() ? e.message : null);
      return;
    }
    $('app').hidden = false;
    showError(e);
    return;
  }
  $('key-panel').hidden = true;
  $('app').hidden = false;
  $('forget-key').hidden = !key();
  describe(model);
  await refreshHistory();
}

/** Fills the form's hints from the card: defaults, whether it takes an image, caches, adapters. */
function describe(m) {
  $('model-name').textContent = m.id;
  const d = m.defaults;
  $('size').placeholder = d.size;
  $('length').placeholder = d.num_frames + ' frames';
  $('num_inference_steps').placeholder = d.num_inference_steps;
  $('guidance_scale').placeholder = d.guidance_scale;
  $('image-field').hidden = !(m.tasks.includes('i2v') || m.tasks.includes('ti2v'));
  const caches = $('caches');
  caches.replaceChildren();
  for (const c of m.caches) {
    caches.append(checkbox('cache-' + c.id, c.id, c.id + (c.distribution_altering ? ' (alters output)' : '')));
  }
  $('caches-field').hidden = m.caches.length === 0;
  const loras = $('loras');
  loras.replaceChildren();
  for (const l of m.loras) {
    const row = checkbox('lora-' + l.name, l.name, l.name + ' (rank ' + l.rank + ')');
    const scale = document.createElement('input');
    scale.id = 'lora-scale-' + l.name;
    scale.value = '1';
    scale.size = 4;
    scale.setAttribute('aria-label', l.name + ' scale');
    row.append(scale);
    loras.append(row);
  }
  $('loras-field').hidden = m.loras.length === 0;
}

function checkbox(id, value, text) {
  const label = document.createElement('label');
  label.className = 'inline';
  const box = document.createElement('input');
  box.type = 'checkbox';
  box.id = id;
  box.value = value;
  label.append(box, ' ' + text);
  return label;
}

/** The form as multipart fields, as OpenAI's SDKs send a video call (a file needs multipart). */
function body() {
  const form = new FormData();
  const text = (id, name) => {
    const v = $(id).value.trim();
    if (v !== '') form.append(name || id, v);
  };
  text('prompt');
  text('negative_prompt');
  text('size');
  text('length', $('length-unit').value);
  text('num_inference_steps');
  text('guidance_scale');
  text('seed');
  const image = $('input_reference').files[0];
  if (!$('image-field').hidden && image) form.append('input_reference', image, image.name);
  const caches = model.caches.filter((c) => $('cache-' + c.id).checked).map((c) => c.id);
  if (caches.length) form.append('cache', caches.join(','));
  for (const l of model.loras) {
    if ($('lora-' + l.name).checked) form.append('lora.' + l.name, $('lora-scale-' + l.name).value);
  }
  if ($('previews').checked) {
    const steps = Number($('num_inference_steps').value) || model.defaults.num_inference_steps;
    form.append('preview_every', String(Math.max(1, Math.round(steps / 10))));
  }
  return form;
}

async function submit(event) {
  event.preventDefault();
  showError(null);
  $('submit').disabled = true;
  try {
    const video = await api('/v1/videos', {method: 'POST', body: body()});
    follow(video);
    refreshHistory();
  } catch (e) {
    showError(e);
  } finally {
    $('submit').disabled = false;
  }
}

function setStatus(status) {
  const s = $('job-status');
  s.textContent = status;
  s.dataset.status = status;
  $('cancel').hidden = status !== 'queued' && status !== 'in_progress';
}

/** Shows a job: its stream while it runs, its video once completed. */
function follow(video) {
  if (following) following.controller.abort();
  following = null;
  $('job').hidden = false;
  $('job-id').textContent = video.id;
  $('result').hidden = true;
  $('preview').hidden = true;
  $('progress').value = video.progress / 100;
  $('progress-text').textContent = '';
  setStatus(video.status);
  if (video.status === 'completed') {
    showResult(video);
  } else if (video.status === 'queued' || video.status === 'in_progress') {
    stream(video.id);
  } else if (video.error) {
    $('progress-text').textContent = video.error.message;
  }
}

/** Reads the job's Server-Sent Events through fetch, so the key travels in a header. */
async function stream(id) {
  const controller = new AbortController();
  following = {id, controller};
  try {
    const res = await fetch('/v1/videos/' + id + '/events', {headers: headers(), signal: controller.signal});
    if (!res.ok) throw await failure(res);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = parse(frame);
        if (event) onEvent(id, event.type, event.data);
      }
    }
  } catch (e) {
    if (e.name !== 'AbortError') showError(e);
  } finally {
    if (following && following.id === id) following = null;
  }
}

function parse(frame) {
  let type = 'message';
  const data = [];
  for (const line of frame.split('\n')) {
    if (line.startsWith('event: ')) type = line.slice(7);
    else if (line.startsWith('data: ')) data.push(line.slice(6));
  }
  return data.length ? {type, data: JSON.parse(data.join('\n'))} : null;
}

function onEvent(id, type, data) {
  if ($('job-id').textContent !== id) return;
  switch (type) {
    case 'request.started':
      setStatus('in_progress');
      break;
    case 'request.step': {
      const perStep = data.elapsed_s / data.step;
      const eta = perStep * (data.total_steps - data.step);
      $('progress').value = data.step / data.total_steps;
      $('progress-text').textContent =
          data.loop + ': step ' + data.step + ' / ' + data.total_steps + ' · ETA ' + eta.toFixed(1) + ' s';
      break;
    }
    case 'media.preview':
      $('preview').src = data.image;
      $('preview').dataset.step = data.step;
      $('preview').hidden = false;
      break;
    case 'video.completed':
    case 'video.failed':
    case 'video.cancelled':
      follow(data);
      refreshHistory();
      break;
    default:
      break;
  }
}

async function cancel() {
  const id = $('job-id').textContent;
  showError(null);
  try {
    await api('/v1/videos/' + encodeURIComponent(id), {method: 'DELETE'});
    if (following && following.id === id) following.controller.abort();
    setStatus('cancelled');
    $('progress-text').textContent = 'cancelled';
    refreshHistory();
  } catch (e) {
    showError(e);
  }
}

/**
 * The video straight from /content (the browser seeks with Range requests), or, where the server
 * needs a key a video element cannot send, fetched with the key into an object URL.
 */
async function showResult(video) {
  const url = '/v1/videos/' + video.id + '/content';
  if (resultUrl) URL.revokeObjectURL(resultUrl);
  resultUrl = null;
  let src = url;
  if (key()) {
    try {
      const res = await fetch(url, {headers: headers()});
      if (!res.ok) throw await failure(res);
      resultUrl = URL.createObjectURL(await res.blob());
      src = resultUrl;
    } catch (e) {
      showError(e);
      return;
    }
  }
  $('progress').value = 1;
  $('progress-text').textContent = 'completed in ' + (video.timings && video.timings.running_s) + ' s';
  $('video').src = src;
  $('download').href = src;
  $('download').download = video.id + '.mp4';
  $('result').hidden = false;
}

async function refreshHistory() {
  try {
    const list = await api('/v1/videos?limit=20');
    const rows = list.data.map((v) => {
      const tr = document.createElement('tr');
      tr.dataset.id = v.id;
      tr.dataset.status = v.status;
      for (const text of [v.id, v.status, v.progress + '%', v.prompt]) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.append(td);
      }
      tr.addEventListener('click', () => follow(v));
      return tr;
    });
    document.querySelector('#history tbody').replaceChildren(...rows);
  } catch (e) {
    showError(e);
  }
}

function saveKey(event) {
  event.preventDefault();
  const k = $('api-key').value.trim();
  if (k) sessionStorage.setItem(KEY, k);
  start();
}

function forgetKey() {
  sessionStorage.removeItem(KEY);
  start();
}

document.addEventListener('DOMContentLoaded', () => {
  $('create').addEventListener('submit', submit);
  $('key-form').addEventListener('submit', saveKey);
  $('forget-key').addEventListener('click', forgetKey);
  $('cancel').addEventListener('click', cancel);
  $('refresh').addEventListener('click', refreshHistory);
  $('length-unit').addEventListener('change', () => { $('length').name = $('length-unit').value; });
  start();
});
